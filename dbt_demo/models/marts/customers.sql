-- One row per customer with their order history summarised.
{{ import_ctes(customers=ref('stg_customers'), orders=ref('orders')) }}

customer_orders as (

    select
        customer_id,
        min(order_date) as first_order_date,
        max(order_date) as most_recent_order_date,
        count(order_id) as number_of_orders,
        -- returned orders were refunded, so they do not count towards lifetime value
        sum(case when status = 'returned' then 0 else total_paid end) as lifetime_value
    from orders
    group by customer_id

)

select
    customers.customer_id,
    customers.full_name,
    customers.email,
    customers.created_at as customer_since,
    customer_orders.first_order_date,
    customer_orders.most_recent_order_date,
    coalesce(customer_orders.number_of_orders, 0) as number_of_orders,
    coalesce(customer_orders.lifetime_value, 0) as lifetime_value
from customers
left join customer_orders
    on customers.customer_id = customer_orders.customer_id
