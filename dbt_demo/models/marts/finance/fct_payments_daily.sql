-- Daily payment totals per payment method (grain: order_date x payment_method).
--
-- Incremental: a run only recomputes the days that received payments loaded after the newest
-- `last_loaded_at` already in the table; delete+insert on the grain replaces those days whole,
-- so a day is never half-counted.
{{
    config(
        materialized='incremental',
        unique_key=['order_date', 'payment_method'],
        incremental_strategy='delete+insert',
        on_schema_change='fail'
    )
}}

{{ import_ctes(payments=ref('stg_payments'), orders=ref('stg_orders')) }}

order_payments as (

    select
        orders.order_date,
        payments.payment_method,
        payments.amount,
        payments.loaded_at
    from payments
    inner join orders
        on payments.order_id = orders.order_id

),

{% if is_incremental() %}
changed_days as (

    select distinct order_date
    from order_payments
    where loaded_at > (select max(last_loaded_at) from {{ this }})

),
{% endif %}

daily as (

    select
        order_date,
        payment_method,
        count(*) as payment_count,
        sum(amount) as amount,
        max(loaded_at) as last_loaded_at
    from order_payments
    {% if is_incremental() %}
    where order_date in (select order_date from changed_days)
    {% endif %}
    group by order_date, payment_method

)

select * from daily
