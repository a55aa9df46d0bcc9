"""The one secret scrubber (ade_platform/lib/secrets.py): every configured secret of every section, in every
form it takes in text, the common credential shapes, in linear time; logs capped before they are scrubbed."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from ade_platform.config import load_settings
from ade_platform.lib.orchestrators.logs import cap_log, scrub_secrets
from ade_platform.lib.secrets import SecretScrubber, configured_secrets
from tests.unit.bounded import run_bounded

SECRETS = {
    "DBT_TOKEN": "dbtc_Zq8xN3vR7yT2pL5kW9mB4hJ6",
    "LOOKER_ID": "lk-client-id-7Hq2",
    "LOOKER_SECRET": "lk-secret-9Pw3Zr5Tq",
    "MB_KEY": "metabase-key-4Rt8Yp",
    "MB_PASSWORD": "mb-pass-6Gh2",
    "SF_PASSWORD": "sf-pass-1Xc5Vb",
    "S3_KEY": "AKIA-test-key-3Nm7",
    "S3_SECRET": "s3-secret-8Lk4Jh/Qw+",
    "MCP_TOKEN": "mcp-token-5Df9Sa2Qw8Er4Ty6Ui3Op1As7Dj0",
    "AF_PASSWORD": "airflow-pass-2Bn6",
    "PREFECT_KEY": "prefect-key-0Vc3",
    "PREFECT_AUTH": "admin:prefect-basic-pass-7Yt1",
}
CONFIG = """
store: {s3: {access_key_id: "${S3_KEY}", secret_access_key: "${S3_SECRET}"}}
warehouses:
  sf: {type: snowflake, account: acme, user: bot, password: "${SF_PASSWORD}"}
dbt_cloud: {account_id: 1, api_token: "${DBT_TOKEN}"}
bi:
  looker: {base_url: "https://looker.invalid", client_id: "${LOOKER_ID}", client_secret: "${LOOKER_SECRET}"}
  metabase: {base_url: "https://mb.invalid", api_key: "${MB_KEY}", username: u, password: "${MB_PASSWORD}"}
mcp: {http: {token: "${MCP_TOKEN}"}}
orchestrators:
  airflow: {base_url: "http://airflow.invalid", username: u, password: "${AF_PASSWORD}"}
  prefect: {api_url: "http://prefect.invalid/api", api_key: "${PREFECT_KEY}", auth_string: "${PREFECT_AUTH}"}
"""


def test_every_configured_secret_of_every_section_is_collected(tmp_path: Path) -> None:
    (tmp_path / "ade.yaml").write_text(CONFIG)
    settings = load_settings(tmp_path / "ade.yaml", env={"ADE_HOME": str(tmp_path), **SECRETS})
    found = set(configured_secrets(settings))
    assert set(SECRETS.values()) <= found
    assert "prefect-basic-pass-7Yt1" in found  # the password half of user:password
    text = "\n".join(f"{name}={value} and later {value}" for name, value in SECRETS.items())
    clean = SecretScrubber(found).scrub(text)
    assert not any(value in clean for value in SECRETS.values()), clean


SECRET = "Zx9/+pass word&more=="


@pytest.mark.parametrize(
    "form",
    [
        SECRET,
        quote(SECRET, safe=""),
        quote_plus(SECRET, safe=""),
        re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), quote(SECRET, safe="")),  # lowercase hex
        json.dumps(SECRET)[1:-1],
        "Zx9/+pass wo\nrd&more==",  # split across two lines
        "Zx9/+pa\n    ss word&mo\r\n  re==",  # wrapped with indentation, three lines
    ],
)
def test_a_configured_secret_in_any_form_is_scrubbed(form: str) -> None:
    clean = SecretScrubber([SECRET]).scrub(f"connecting ({form}) done")
    assert clean == "connecting (***) done"


@pytest.mark.parametrize("prefix", ["", "u:", "us:", "user:"])
def test_a_configured_secret_inside_base64_is_scrubbed_at_any_alignment(prefix: str) -> None:
    encoded = base64.b64encode(f"{prefix}{SECRET}".encode()).decode()
    for alphabet in (encoded, encoded.replace("+", "-").replace("/", "_")):
        clean = SecretScrubber([SECRET]).scrub(f"X-Auth: {alphabet}")
        assert "***" in clean
        core = base64.b64encode(SECRET.encode()).decode()[2:-4]
        assert core not in clean and core.replace("+", "-").replace("/", "_") not in clean


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("token dbtc_Zq8xN3vR7yT2pL5kW9mB4hJ6x in use", "dbtc_Zq8xN3vR7yT2pL5kW9mB4hJ6x"),
        ("token dbtu_Zq8xN3vR7yT2pL5kW9mB4hJ6x in use", "dbtu_Zq8xN3vR7yT2pL5kW9mB4hJ6x"),
        ("connect password=hunter22 host=db", "hunter22"),
        ("connect pwd=hunter22;server=db", "hunter22"),
        ("mysql --password hunter22 -h db", "hunter22"),
        ("snow --password='hunter 22' sql", "hunter 22"),
        ("config {'user': 'bot', 'password': 'hunter22'}", "hunter22"),
        ('config {"db_password": "hunter22"}', "hunter22"),
        ("SNOWFLAKE_PASSWORD=hunter22", "hunter22"),
        ("Authorization: Bearer abcdefghij123", "abcdefghij123"),
        ("Authorization: Basic dXNlcjpodW50ZXIyMg==", "dXNlcjpodW50ZXIyMg=="),
        ("Authorization: Token abcdef123456", "abcdef123456"),
        ("headers={'Authorization': 'Token abcdef123456'}", "abcdef123456"),
        ("X-API-KEY: mb_AbCdEfGhIjKlMnOpQrStUvWx", "mb_AbCdEfGhIjKlMnOpQrStUvWx"),
        ("postgresql://etl:pa55word@db:5432/x", "pa55word"),
        ("-----BEGIN PRIVATE KEY-----\nMIIsecretbody\n-----END PRIVATE KEY-----", "MIIsecretbody"),
        ("MIIsecretbody\n-----END RSA PRIVATE KEY-----\n", "MIIsecretbody"),  # a tail cut inside a key
    ],
)
def test_credential_shapes_are_scrubbed(text: str, secret: str) -> None:
    assert secret not in scrub_secrets(text)


def test_ordinary_log_lines_are_left_alone() -> None:
    text = "22 of 24 ERROR creating sql table model main.stg_orders\nDatabase Error in model stg_orders\n"
    assert scrub_secrets(text) == text


def test_scrubbing_hostile_logs_is_linear_within_a_cpu_bound() -> None:
    # 16 KB of `a-` took ~10 s on the old backtracking patterns; these are 2 MB each.
    sizes = run_bounded(
        "import json\n"
        "from ade_platform.lib.orchestrators.logs import scrub_secrets\n"
        "hostile = ['a-' * 1_000_000, 'eyJ' * 700_000, 'a://a:' * 350_000, 'password' * 250_000,\n"
        "           '--password' * 200_000, 'Bearer ' * 300_000, 'x' * 2_000_000 + 'password=']\n"
        "print(json.dumps([len(scrub_secrets(text, ['hunter2-secret'])) for text in hostile]))"
    )
    assert len(sizes) == 7


def test_a_50_mb_log_is_capped_before_it_is_scrubbed_within_a_cpu_bound() -> None:
    result = run_bounded(
        "import json\n"
        "from ade_platform.lib.orchestrators.logs import cap_log\n"
        "capped = cap_log('a-' * 25_000_000 + '\\npassword=hunter22\\n', max_chars=50_000)\n"
        "print(json.dumps([capped.length_chars, capped.truncated, len(capped.text), 'hunter22' in capped.text]))"
    )
    length, truncated, kept, leaked = result
    assert length == 50_000_019 and truncated and kept <= 50_000 and not leaked


def test_a_secret_straddling_the_cut_is_scrubbed_whole() -> None:
    secret = "s3cr3t-straddling-the-cut-0123456789"
    for offset in range(1, len(secret)):  # the cut falls inside the secret, at every position
        log = "x" * 60_000 + secret + "y" * (50_000 - offset)
        capped = cap_log(log, [secret], max_chars=50_000)
        assert capped.truncated and capped.length_chars == len(log)
        assert secret[-offset:] not in capped.text, offset  # the part after the cut
    lines = "".join(f"line {i}\n" for i in range(20_000)) + f"token={secret}\n" + "end\n"
    capped = cap_log(lines, max_chars=1_000)
    assert secret[5:] not in capped.text and capped.text.endswith("end\n")
