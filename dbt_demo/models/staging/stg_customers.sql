-- One row per customer, renamed to the project's conventions. Personal columns are passed
-- through unchanged: only `email` is tagged pii in _staging.yml, the rest are left for the
-- PII scanner to discover.
{% call stage(source('raw', 'customers'), 'customer_id') %}
        full_name,
        email,
        phone,
        date_of_birth,
        address,
        created_at,
{% endcall %}
