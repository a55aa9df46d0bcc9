"""File tools never hand out credentials (issue 34, "Nothing secret leaves"): project YAML with secrets in every
YAML form, read through MCP `fs_read_schema_yaml` / `fs_read_project_config` / `fs_read_model_sql`; credential
stores refused whole. Each variant's secret is unique, so one surviving anywhere in an answer fails the test."""

from __future__ import annotations

import base64
import itertools
import json
import random
from pathlib import Path

import pytest

from ade_platform.config import Settings
from mcp_bridge.server import build_server
from tests.helpers import call_tools
from tests.mcp.dbt_support import PROJECT, manifest, model, serve_target, write

# Keys that name a secret, as people write them (dbt profiles, adapters, cloud SDKs, camelCase, spaces).
SECRET_KEYS = [
    "password", "pass", "passwd", "pwd", "secret", "token", "api_key", "private_key", "private_key_passphrase",
    "client_secret", "access_key", "AWS_SECRET_ACCESS_KEY", "clientSecret", "apiKey", "Api Key", "db-password",
    "refresh_token", "keyfile_json",
]  # fmt: skip


def _secret(rng: random.Random, n: int = 20) -> str:
    return "S" + "".join(rng.choice("abcdefghjkmnpqrstuvwxyz23456789") for _ in range(n))


def _forms(key: str, secret: str) -> dict[str, tuple[str, list[str]]]:
    """form -> (YAML text, the substrings that must not come back)."""
    half = len(secret) // 2
    a, b = secret[:half], secret[half:]
    k = json.dumps(key) if " " in key else key
    return {
        "block": (f"outputs:\n  dev:\n    {k}: {secret}\n", [secret]),
        "single_quoted": (f"outputs:\n  dev:\n    {k}: '{secret}'\n", [secret]),
        "double_quoted": (f'outputs:\n  dev:\n    {k}: "{secret}"\n', [secret]),
        "flow": (f"outputs: {{dev: {{type: x, {k}: {secret}}}}}\n", [secret]),
        "literal": (f"outputs:\n  dev:\n    {k}: |\n      {a}\n      {b}\n", [a, b]),
        "folded": (f"outputs:\n  dev:\n    {k}: >-\n      {a}\n      {b}\n", [a, b]),
        "plain_multiline": (f"outputs:\n  dev:\n    {k}: {a}\n      {b}\n", [a, b]),
        "quoted_multiline": (f'outputs:\n  dev:\n    {k}: "{a}\\\n      {b}"\n', [secret]),
        "anchor_alias": (f"defaults: &d\n  note: &s {secret}\nprod:\n  {k}: *s\n", [secret]),
        "merge_key": (f"base: &b\n  {k}: {secret}\nprod:\n  <<: *b\n  user: bob\n", [secret]),
        "list_deep": (
            f"sources:\n  - name: raw\n    meta:\n      conn:\n        - {{{k}: {secret}}}\n",
            [secret],
        ),
        "json_style": (f'conn: {{"outputs": {{"dev": {{{json.dumps(key)}: "{secret}"}}}}}}\n', [secret]),
        "nested_under_key": (f"{k}:\n  value: {secret}\n  other: [{secret}x]\n", [secret]),
        "env_default": (f"vars:\n  {k}: \"{{{{ env_var('X', '{secret}') }}}}\"\n", [secret]),
    }


def _pem() -> str:
    body = base64.b64encode(random.Random(7).randbytes(600)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"


def _value_shaped(rng: random.Random) -> dict[str, tuple[str, list[str]]]:
    """Secrets recognised by their shape, under keys that say nothing (a description, a var, a note)."""
    pem = _pem()
    lines = pem.splitlines()[1:-1]
    der = "MIIE" + base64.b64encode(rng.randbytes(300)).decode()
    b64 = base64.b64encode(rng.randbytes(96)).decode()
    pw, tok, user_pw = _secret(rng), _secret(rng), _secret(rng)
    jwt = (
        "eyJhbGciOiJIUzI1NiJ9."
        + base64.urlsafe_b64encode(rng.randbytes(30)).decode().rstrip("=")
        + ".sig"
        + pw
    )
    indented = "\n".join("    " + line for line in pem.splitlines())
    return {
        "pem_literal": (f"vars:\n  note: |\n{indented}\n", lines),
        "pem_quoted": (f"vars:\n  note: {json.dumps(pem)}\n", lines),
        "pem_folded_flow": (f"vars: {{blob: {json.dumps(pem)}}}\n", lines),
        "der_base64_any_key": (f"vars:\n  blob: {der}\n", [der[4:40]]),
        "base64_under_key_name": (f"vars:\n  rsa_key: {b64}\n", [b64[:30], b64[-30:]]),
        "base64_wrapped_under_key": (
            f"vars:\n  signing_cert: >\n    {b64[:60]}\n    {b64[60:]}\n",
            [b64[:30]],
        ),
        "env_var_secret_name": (f"vars:\n  x: \"{{{{ env_var('SNOWFLAKE_PASSWORD', '{pw}') }}}}\"\n", [pw]),
        "env_var_token_name": (f'vars:\n  y: "{{{{ env_var(\\"DBT_API_TOKEN\\", \\"{tok}\\") }}}}"\n', [tok]),
        "url_userinfo": (f"vars:\n  dsn_note: postgres://loader:{user_pw}@db.internal:5432/x\n", [user_pw]),
        "url_userinfo_in_list": (f'vars:\n  urls: ["https://bob:{user_pw}x@h/x"]\n', [user_pw]),
        "jwt_in_description": (f"models:\n  - name: m\n    description: 'call with {jwt}'\n", [jwt[-20:]]),
        "password_assignment_text": (f"vars:\n  cmd: 'psql password={pw}x'\n", [pw]),
    }


def _variants() -> dict[str, tuple[str, list[str]]]:
    rng = random.Random(34)
    out: dict[str, tuple[str, list[str]]] = {}
    for key in SECRET_KEYS:
        for form, case in _forms(key, _secret(rng)).items():
            out[f"key[{key}]-{form}"] = case
    out.update(_value_shaped(rng))
    return out


VARIANTS = _variants()
# Credential stores: refused whole, whatever their case, folder or the symlink that leads to them.
STORES = [
    "profiles.yml", "models/profiles.yaml", "PROFILES.YML", ".user.yml", "credentials.yml", "models/Credentials.YAML",
    "secrets.yml", "config/secrets.prod.yaml", ".dbt/profiles.yml", "models/.dbt/extra.yml", ".ssh/config.yml",
    "models/link_to_profiles.yml", "keys/server.pem", "keys/rsa_key.p8", ".env", "prod.env",
]  # fmt: skip


@pytest.fixture
def project(tmp_settings: Settings, tmp_path: Path) -> Settings:
    root = tmp_path / "proj"
    (root / "models" / "leaks").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(
        f"name: {PROJECT}\nprofile: {PROJECT}\nmodel-paths: [models]\n"
        "vars:\n  start: '2025-01-01'\n  warehouse_password: hunter2hunter2\n"
        "  conn: \"{{ env_var('DBT_ENV_SECRET_PW', 'defaultSecretPw') }}\"\n"
    )
    for i, (text, _) in enumerate(VARIANTS.values()):
        (root / "models" / "leaks" / f"v{i}.yml").write_text(f"version: 2\n{text}keep_me: visible_value\n")
    for rel in STORES:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel == "models/link_to_profiles.yml":
            continue
        path.write_text("shop:\n  outputs:\n    dev: {password: storedSecretValue}\n")
    (root / "models" / "link_to_profiles.yml").symlink_to(root / "profiles.yml")
    (root / "models" / "secrets_audit.sql").write_text("select 1 as n\n")
    (root / "models" / "stg_orders.sql").write_text(
        "-- connect with password=modelSqlSecret\nselect 1 as n\n"
        "-- {{ env_var('DBT_TOKEN', 'modelDefaultTok') }}\n" + _pem()
    )
    graph = manifest(model("stg_orders", []))
    target = write(root / "target", manifest=graph)
    return serve_target(tmp_settings, target, project=root)


def test_no_secret_comes_back_from_any_yaml_form(project: Settings) -> None:
    names = list(VARIANTS)
    calls = [("fs_read_schema_yaml", {"schema_path": f"models/leaks/v{i}.yml"}) for i in range(len(names))]
    answers = call_tools(build_server(project, only="dbt-project"), calls)
    failures = []
    per_class: dict[str, int] = {}
    for name, (ok, answer) in zip(names, answers, strict=True):
        per_class[name.split("-")[-1] if name.startswith("key[") else name] = 0
        assert ok, (name, answer)
        text = json.dumps(answer)
        leaked = [s for s in VARIANTS[name][1] if s in text]
        if leaked or answer["redactions"]["count"] < 1 or answer["content"].get("keep_me") != "visible_value":
            failures.append((name, leaked, answer["redactions"]))
    assert not failures, failures
    assert len(names) >= len(SECRET_KEYS) * 14 + 12


def test_credential_stores_are_refused(project: Settings) -> None:
    calls = [("fs_read_schema_yaml", {"schema_path": rel}) for rel in STORES]
    for rel, (ok, answer) in zip(
        STORES, call_tools(build_server(project, only="dbt-project"), calls), strict=True
    ):
        assert not ok and answer["error"] == "path_not_allowed", (rel, answer)
        assert "storedSecretValue" not in json.dumps(answer)


def test_project_config_and_model_sql_are_scrubbed(project: Settings) -> None:
    calls = [
        ("fs_read_project_config", {}),
        ("fs_read_model_sql", {"model_name": "stg_orders"}),
        ("fs_read_model_sql", {"model_name": "secrets_audit"}),
    ]
    (ok_cfg, cfg), (ok_sql, sql), (ok_plain, plain) = call_tools(
        build_server(project, only="dbt-project"), calls
    )
    assert ok_cfg and ok_sql and ok_plain, (cfg, sql, plain)
    text = json.dumps([cfg, sql])
    for secret in (
        "hunter2hunter2",
        "defaultSecretPw",
        "modelSqlSecret",
        "modelDefaultTok",
        _pem().splitlines()[2],
    ):
        assert secret not in text, secret
    assert cfg["content"]["vars"]["start"] == "2025-01-01"
    assert sorted(cfg["redactions"]["paths"]) == ["vars.conn", "vars.warehouse_password"]
    assert sql["redactions"]["count"] >= 3 and not sql["redactions"]["parsed"]
    assert plain["sql"] == "select 1 as n\n" and plain["redactions"]["count"] == 0


def test_an_alias_bomb_is_refused_not_expanded(project: Settings, tmp_path: Path) -> None:
    layers = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    layers += [f"{c}: &{c} [{', '.join(['*' + p] * 10)}]" for p, c in itertools.pairwise("abcdefg")]
    root = project.dbt.project_dir
    (root / "models" / "bomb.yml").write_text("\n".join(layers) + "\n")
    [(ok, answer)] = call_tools(
        build_server(project, only="dbt-project"),
        [("fs_read_schema_yaml", {"schema_path": "models/bomb.yml"})],
    )
    assert not ok and answer["error"] == "limit_exceeded", answer
