-- One row per order with what was paid, split by payment method.
{%- set payment_methods = ['credit_card', 'coupon', 'bank_transfer', 'gift_card'] %}

{{ import_ctes(orders=ref('stg_orders'), payments=ref('stg_payments')) }}

order_payments as (

    select
        order_id,
        {%- for payment_method in payment_methods %}
        sum(case when payment_method = '{{ payment_method }}' then amount else 0 end)
            as {{ payment_method }}_amount,
        {%- endfor %}
        count(*) as payment_count,
        sum(amount) as total_paid
    from payments
    group by order_id

)

select
    orders.order_id,
    orders.customer_id,
    orders.order_date,
    orders.status,
    orders.amount,
    {%- for payment_method in payment_methods %}
    coalesce(order_payments.{{ payment_method }}_amount, 0) as {{ payment_method }}_amount,
    {%- endfor %}
    coalesce(order_payments.payment_count, 0) as payment_count,
    coalesce(order_payments.total_paid, 0) as total_paid
from orders
left join order_payments
    on orders.order_id = order_payments.order_id
