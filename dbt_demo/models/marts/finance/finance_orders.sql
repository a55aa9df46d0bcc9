-- The orders mart as published to the finance team. Deliberately a plain top-level SELECT *:
-- its columns are whatever `orders` has, which lineage and contract tools must resolve.
{{ config(materialized='view') }}

select * from {{ ref('orders') }}
