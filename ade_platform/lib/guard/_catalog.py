"""Allow-lists the classifier trusts. Everything not listed here is treated as able to read row data.

Each list is deliberately short: adding a name widens what reaches the agent unredacted, so every entry
must return metadata only, whatever its arguments.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    # Long name lists read better as whitespace-separated text than as one quoted string per line.
    return frozenset(text.split())


# INFORMATION_SCHEMA views that describe objects. Left out on purpose: LOAD_HISTORY (FIRST_ERROR_MESSAGE
# quotes rejected values). Snowflake reserves the INFORMATION_SCHEMA name in every database, so a user
# cannot create a look-alike schema of that exact (upper-case) name.
INFORMATION_SCHEMA_VIEWS = frozenset(
    {
        "APPLICABLE_ROLES",
        "CLASS_INSTANCES",
        "CLASSES",
        "COLUMNS",
        "CURRENT_PACKAGES_POLICY",
        "DATABASES",
        "ELEMENT_TYPES",
        "ENABLED_ROLES",
        "EVENT_TABLES",
        "EXTERNAL_TABLES",
        "FIELDS",
        "FILE_FORMATS",
        "FUNCTIONS",
        "HYBRID_TABLES",
        "INDEX_COLUMNS",
        "INDEXES",
        "INFORMATION_SCHEMA_CATALOG_NAME",
        "OBJECT_PRIVILEGES",
        "PACKAGES",
        "PIPES",
        "PROCEDURES",
        "REFERENTIAL_CONSTRAINTS",
        "REPLICATION_DATABASES",
        "REPLICATION_GROUPS",
        "SCHEMATA",
        "SEQUENCES",
        "SERVICES",
        "SHARES",
        "STAGES",
        "TABLE_CONSTRAINTS",
        "TABLE_PRIVILEGES",
        "TABLE_STORAGE_METRICS",
        "TABLES",
        "USAGE_PRIVILEGES",
        "VIEWS",
    }
)

# SNOWFLAKE.ACCOUNT_USAGE views that describe objects, grants and cost. Left out: QUERY_HISTORY,
# ACCESS_HISTORY, TASK_HISTORY (query text holds literals from other users' statements), COPY_HISTORY /
# LOAD_HISTORY (error messages quote values), LOGIN_HISTORY / SESSIONS / USERS (people's data).
ACCOUNT_USAGE_VIEWS = frozenset(
    {
        "AUTOMATIC_CLUSTERING_HISTORY",
        "COLUMNS",
        "DATABASE_STORAGE_USAGE_HISTORY",
        "DATABASES",
        "ELEMENT_TYPES",
        "EVENT_TABLES",
        "FIELDS",
        "FILE_FORMATS",
        "FUNCTIONS",
        "GRANTS_TO_ROLES",
        "GRANTS_TO_USERS",
        "MASKING_POLICIES",
        "MATERIALIZED_VIEW_REFRESH_HISTORY",
        "METERING_DAILY_HISTORY",
        "METERING_HISTORY",
        "OBJECT_DEPENDENCIES",
        "PIPES",
        "POLICY_REFERENCES",
        "PROCEDURES",
        "REFERENTIAL_CONSTRAINTS",
        "ROLES",
        "ROW_ACCESS_POLICIES",
        "SCHEMATA",
        "SEQUENCES",
        "STAGE_STORAGE_USAGE_HISTORY",
        "STAGES",
        "STORAGE_USAGE",
        "TABLE_CONSTRAINTS",
        "TABLE_STORAGE_METRICS",
        "TABLES",
        "TAG_REFERENCES",
        "TAGS",
        "VIEWS",
        "WAREHOUSE_METERING_HISTORY",
    }
)

# INFORMATION_SCHEMA table functions that return metadata. Value: index of a string argument naming an
# object, and the index of the argument naming its kind (or a fixed kind), for exclusion checks.
INFORMATION_SCHEMA_TABLE_FUNCTIONS: dict[str, tuple[int, int | str] | None] = {
    "TAG_REFERENCES": (0, 1),
    "TAG_REFERENCES_ALL_COLUMNS": (0, 1),
    "POLICY_REFERENCES": None,
    "TASK_DEPENDENTS": (0, "TASK"),  # a task tree's definitions, as SHOW TASKS / GET_DDL give them
    "WAREHOUSE_METERING_HISTORY": None,
    "DATABASE_STORAGE_USAGE_HISTORY": None,
    "STAGE_STORAGE_USAGE_HISTORY": None,
}

# Scalar functions that return metadata about named objects: same argument convention as above.
METADATA_FUNCTIONS: dict[str, tuple[int, int | str] | None] = {
    "GET_DDL": (1, 0),
    "SYSTEM$CLUSTERING_INFORMATION": (0, "TABLE"),
    "SYSTEM$CLUSTERING_DEPTH": (0, "TABLE"),
    "SYSTEM$GET_TAG": (1, 2),
    "SYSTEM$GET_TAG_ALLOWED_VALUES": (0, "TAG"),
    "SYSTEM$ALLOWLIST": None,
    "SYSTEM$BEHAVIOR_CHANGE_BUNDLE_STATUS": None,
    "SYSTEM$GET_SNOWFLAKE_PLATFORM_INFO": None,
    "SYSTEM$TYPEOF": None,
    # Read-only status functions over one named object (literal arguments only, see _refs.py).
    "SYSTEM$PIPE_STATUS": (0, "PIPE"),
    "SYSTEM$STREAM_HAS_DATA": (0, "STREAM"),
    "SYSTEM$LAST_CHANGE_COMMIT_TIME": (0, "TABLE"),
    "SYSTEM$ESTIMATE_SEARCH_OPTIMIZATION_COSTS": (0, "TABLE"),
    "SYSTEM$DATABASE_REFRESH_PROGRESS": (0, "DATABASE"),
    "SYSTEM$GET_PRIVATELINK_CONFIG": None,
    "SYSTEM$ALLOWLIST_PRIVATELINK": None,
    "SYSTEM$SHOW_ACTIVE_BEHAVIOR_CHANGE_BUNDLES": None,
}

# Session/context functions: no arguments that reach data, no side effects.
CONTEXT_FUNCTIONS = frozenset(
    {
        "CURRENT_ACCOUNT",
        "CURRENT_ACCOUNT_NAME",
        "CURRENT_AVAILABLE_ROLES",
        "CURRENT_CLIENT",
        "CURRENT_DATABASE",
        "CURRENT_DATE",
        "CURRENT_IP_ADDRESS",
        "CURRENT_ORGANIZATION_NAME",
        "CURRENT_REGION",
        "CURRENT_ROLE",
        "CURRENT_ROLE_TYPE",
        "CURRENT_SCHEMA",
        "CURRENT_SCHEMAS",
        "CURRENT_SECONDARY_ROLES",
        "CURRENT_SESSION",
        "CURRENT_STATEMENT",
        "CURRENT_TIME",
        "CURRENT_TIMESTAMP",
        "CURRENT_TRANSACTION",
        "CURRENT_USER",
        "CURRENT_VERSION",
        "CURRENT_WAREHOUSE",
        "GETDATE",
        "INVOKER_ROLE",
        "INVOKER_SHARE",
        "IS_DATABASE_ROLE_IN_SESSION",
        "IS_ROLE_IN_SESSION",
        "LAST_TRANSACTION",
        "LOCALTIME",
        "LOCALTIMESTAMP",
        "SYSDATE",
    }
)

# Snowflake built-in scalar/aggregate/window functions a metadata query may apply to metadata columns.
# Checked against the name as *written* (from the token stream): sqlglot also knows functions of other
# dialects, and a Snowflake UDF with such a name (say APPROX_DISTINCT) would be called instead.
BUILTIN_FUNCTIONS = _words(
    """
    ABS ANY_VALUE ARRAY_AGG ARRAY_APPEND ARRAY_CAT ARRAY_COMPACT ARRAY_CONSTRUCT ARRAY_CONTAINS ARRAY_DISTINCT
    ARRAY_INTERSECTION ARRAY_JOIN ARRAY_POSITION ARRAY_SIZE ARRAY_SLICE ARRAY_SORT ARRAY_TO_STRING
    ARRAY_UNIQUE_AGG ARRAYS_OVERLAP AS_VARCHAR AVG BOOLAND_AGG BOOLOR_AGG CAST CEIL CHARINDEX COALESCE COLLATE
    CONCAT CONCAT_WS CONTAINS CONVERT_TIMEZONE COUNT COUNT_IF CUME_DIST DATE DATE_FROM_PARTS DATE_PART DATE_TRUNC
    DATEADD DATEDIFF DAYNAME DAYOFWEEK DECODE DENSE_RANK DIV0 EDITDISTANCE ENDSWITH EQUAL_NULL EXTRACT
    FIRST_VALUE FLATTEN FLOOR GENERATOR GET GET_PATH GREATEST HASH IFF IFNULL ILIKE INITCAP INSTR IS_ARRAY
    IS_NULL_VALUE IS_OBJECT LAG LAST_DAY LAST_VALUE LEAD LEAST LEFT LEN LENGTH LIKE LISTAGG LN LOWER LPAD
    LTRIM MAX MEDIAN MIN MOD MONTHNAME NTH_VALUE NTILE NULLIF NVL NVL2 OBJECT_AGG OBJECT_CONSTRUCT
    OBJECT_CONSTRUCT_KEEP_NULL OBJECT_KEYS PARSE_JSON PERCENT_RANK POSITION POWER RANK RATIO_TO_REPORT
    REGEXP_COUNT REGEXP_INSTR REGEXP_LIKE REGEXP_REPLACE REGEXP_SUBSTR REPEAT REPLACE REVERSE RIGHT RLIKE
    ROUND ROW_NUMBER RPAD RTRIM SPLIT SPLIT_PART SPLIT_TO_TABLE SQRT STARTSWITH STRIP_NULL_VALUE
    STRTOK STRTOK_SPLIT_TO_TABLE STRTOK_TO_ARRAY SUBSTR SUBSTRING SUM TIME TIMEADD TIMEDIFF TIMESTAMP
    TIMESTAMPADD TIMESTAMPDIFF TO_ARRAY TO_BOOLEAN TO_CHAR TO_DATE TO_DECIMAL TO_DOUBLE TO_JSON TO_NUMBER
    TO_NUMERIC TO_OBJECT TO_TIME TO_TIMESTAMP TO_TIMESTAMP_LTZ TO_TIMESTAMP_NTZ TO_TIMESTAMP_TZ TO_VARCHAR
    TO_VARIANT TRANSLATE TRIM TRUNC TRUNCATE TRY_CAST TRY_PARSE_JSON TRY_TO_BOOLEAN TRY_TO_DATE
    TRY_TO_NUMBER TRY_TO_TIMESTAMP TYPEOF UPPER YEAR MONTH DAY HOUR MINUTE SECOND WEEK QUARTER ZEROIFNULL
    APPROX_COUNT_DISTINCT HLL MAX_BY MIN_BY STDDEV VARIANCE MODE APPROX_TOP_K APPROX_PERCENTILE
    PERCENTILE_CONT PERCENTILE_DISC KURTOSIS SKEW CORR COVAR_POP COVAR_SAMP STDDEV_POP STDDEV_SAMP
    VAR_POP VAR_SAMP BITAND_AGG BITOR_AGG BITXOR_AGG BOOLXOR_AGG FIRST LAST PREV NEXT CLASSIFIER
    MATCH_NUMBER MATCH_SEQUENCE_NUMBER ARRAY_FLATTEN ARRAY_MAX ARRAY_MIN OBJECT_DELETE OBJECT_INSERT
    OBJECT_PICK TRY_TO_DECIMAL TRY_TO_DOUBLE TRY_TO_TIME BASE64_ENCODE BASE64_DECODE_STRING HEX_ENCODE
    CHR ASCII UNICODE SOUNDEX SHA1 SHA2 MD5 UUID_STRING RANDOM UNIFORM SEQ4 SEQ8 SIGN EXP LOG CBRT
    SQUARE PI SIN COS TAN ATAN2 BITAND BITOR BITXOR BITNOT WIDTH_BUCKET DATE_DIFF MONTHS_BETWEEN
    ADD_MONTHS NEXT_DAY PREVIOUS_DAY WEEKOFYEAR DAYOFYEAR DAYOFMONTH YEAROFWEEK
    DIV0 DIV0NULL NULLIFZERO VARIANCE_POP VARIANCE_SAMP IFNULL
    """
)

# The only aggregates that cannot hand back a row's value: they count.
COUNT_FUNCTIONS = frozenset({"COUNT", "COUNT_IF", "APPROX_COUNT_DISTINCT", "HLL"})
NUMERIC_AGG_FUNCTIONS = frozenset({"AVG", "SUM"})

# Built-in table functions that only reshape their input (no data source of their own).
SAFE_TABLE_FUNCTIONS = frozenset({"FLATTEN", "SPLIT_TO_TABLE", "STRTOK_SPLIT_TO_TABLE", "GENERATOR"})
# Built-in table functions that read something other than their arguments; no side effects.
DATA_TABLE_FUNCTIONS = frozenset({"RESULT_SCAN", "INFER_SCHEMA", "VALIDATE", "VALIDATE_PIPE_LOAD"})
# Table functions returning metadata about staged files (INFER_SCHEMA is special-cased in _refs.py).
METADATA_TABLE_FUNCTIONS = frozenset({"INFER_SCHEMA", "DIRECTORY"})

# Names that reach what an earlier statement left behind: its result (LAST_QUERY_ID names it, RESULT_SCAN
# reads it), or a session variable. Refused wherever they are written, quoted or not, called or not.
SESSION_REACH_NAMES = frozenset({"LAST_QUERY_ID", "RESULT_SCAN", "GETVARIABLE"})
# Calls that read an earlier statement's work by id: the rows a COPY rejected (VALIDATE ... '_last'), the
# operator statistics of a query (output row counts answer its predicates), the session's query history.
# Only in call position: as plain names they are ordinary table or column names.
SESSION_REACH_CALLS = frozenset(
    {
        "VALIDATE",
        "GET_QUERY_OPERATOR_STATS",
        "QUERY_HISTORY",
        "QUERY_HISTORY_BY_SESSION",
        "QUERY_HISTORY_BY_USER",
        "QUERY_HISTORY_BY_WAREHOUSE",
    }
)
# Words between CREATE and the object kind; TEMP/TEMPORARY/VOLATILE make a session-scoped object.
CREATE_MODIFIERS = _words(
    """
    OR REPLACE ALTER SECURE LOCAL GLOBAL TEMP TEMPORARY VOLATILE TRANSIENT RECURSIVE HYBRID ICEBERG DYNAMIC
    EXTERNAL MATERIALIZED EVENT
    """
)
SESSION_SCOPED_MODIFIERS = frozenset({"TEMP", "TEMPORARY", "VOLATILE"})

# Words that open a statement which only reads; anything else is presumed to change state.
READ_VERBS = frozenset({"SELECT", "WITH", "SHOW", "DESC", "DESCRIBE", "EXPLAIN", "LIST", "LS", "VALUES", "("})

# Used only when the text cannot be analysed (unparseable, too long, multi-statement): any of these words
# anywhere, even inside a comment or string, makes the batch WRITE, i.e. refused by execute_sql.
WRITE_WORDS = _words(
    """
    INSERT UPDATE DELETE MERGE CREATE ALTER DROP TRUNCATE GRANT REVOKE COPY PUT GET REMOVE RM CALL EXECUTE
    EXEC USE SET UNSET BEGIN COMMIT ROLLBACK UNDROP COMMENT DECLARE LET UNLOAD NEXTVAL
    """
)

# Statement verbs whose effect is opaque code: the statement text does not say what will be touched.
OPAQUE_VERBS = frozenset({"CALL", "EXECUTE", "EXEC", "BEGIN", "DECLARE"})

# Keywords that precede '(' without being a function call.
NON_CALL_WORDS = _words(
    """
    ALL AND ANY AS AT BEFORE BY CHANGES DEFINE DISTINCT ELSE END EXCLUDE EXISTS FROM GROUP HAVING IDENTIFIER
    IN INTO IS JOIN LATERAL LIMIT MATCH_RECOGNIZE MEASURES NOT ON OR OVER PARTITION PATTERN PIVOT QUALIFY
    RENAME SAMPLE SELECT SOME TABLE TABLESAMPLE THEN UNPIVOT USING VALUES WHEN WHERE WITH WITHIN
    BERNOULLI SYSTEM BLOCK ROW SEED REPEATABLE
    """
)

# Object kinds a token-level scan recognises before a name (SHOW GRANTS ON TABLE x, GRANT ... TO ROLE r).
KIND_WORDS = _words(
    """
    DATABASE SCHEMA TABLE VIEW STAGE FUNCTION PROCEDURE ROLE USER WAREHOUSE TASK STREAM PIPE SEQUENCE TAG
    INTEGRATION SHARE ALERT SECRET
    """
)
