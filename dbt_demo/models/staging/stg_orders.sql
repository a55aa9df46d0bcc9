{% call stage(source('raw', 'orders'), 'order_id') %}
        customer_id,
        order_date,
        status,
        amount,
{% endcall %}
