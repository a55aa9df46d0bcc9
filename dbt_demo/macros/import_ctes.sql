{#
    The import CTEs a mart opens with, one per model it reads, named as the keyword says:

        {{ import_ctes(orders=ref('stg_orders'), payments=ref('stg_payments')) }}

    renders `with orders as (select * from ...), payments as (select * from ...),` in the
    project's layout, ready for the mart's own CTEs.
#}
{% macro import_ctes() -%}
    {%- for name, relation in kwargs.items() -%}
        {{ 'with ' if loop.first else '\n\n' }}{{ name }} as (

    select * from {{ relation }}

),
    {%- endfor %}
{%- endmacro %}
