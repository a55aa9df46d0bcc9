{% call stage(source('raw', 'payments'), 'payment_id') %}
        order_id,
        payment_method,
        amount,
        card_last_four,
{% endcall %}
