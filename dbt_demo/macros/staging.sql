{#
    The staging convention, said once: every raw table has a surrogate `id` and the loader's
    `_loaded_at`; a staging model renames the one to `<entity>_id` and the other to `loaded_at`,
    and passes the columns between them (the call block's body) through as they are.

        {% call stage(source('raw', 'orders'), 'order_id') %}
                customer_id,
        {% endcall %}
#}
{% macro stage(relation, key) -%}
with source as (

    select * from {{ relation }}

),

renamed as (

    select
        id as {{ key }},
{{- caller() }}        _loaded_at as loaded_at
    from source

)

select * from renamed
{%- endmacro %}
