"""Each secret shape is redacted, ordinary text is not, and no input makes redaction slow."""

from __future__ import annotations

import base64
import random
import time

import pytest

from ticketing.render.redact import redact_text

# Built from pieces, so the repository itself holds no string a secret scanner flags.
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYEXAMPLEKEY"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\nMzEfYyjiWA4R4/M2bS1G"


def pem(kind: str) -> str:
    """Return a PEM private key block of ``kind`` ("RSA ", "", "PGP ... BLOCK" ...)."""
    label = f"{kind}PRIVATE KEY"
    return f"-----BEGIN {label}-----\n{PEM_BODY}\n-----END {label}-----"


# (id, text the agent sent, the secret that must vanish, the kind the ticket names)
SHAPES = [
    (
        "aws_secret_access_key_next_to_its_key_id",
        f"{AWS_ID} {AWS_SECRET}",
        AWS_SECRET,
        "AWS secret access key",
    ),
    (
        "aws_secret_access_key_in_a_credentials_csv",
        f"Access key ID,Secret access key\n{AWS_ID},{AWS_SECRET}",
        AWS_SECRET,
        "AWS secret access key",
    ),
    (
        "aws_secret_access_key_assignment",
        f"aws_secret_access_key = {AWS_SECRET}",
        AWS_SECRET,
        "AWS secret access key",
    ),
    (
        "aws_secret_access_key_env_variable",
        f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
        AWS_SECRET,
        "AWS secret access key",
    ),
    (
        "aws_secret_access_key_in_sts_json",
        f'{{"SecretAccessKey": "{AWS_SECRET}"}}',
        AWS_SECRET,
        "AWS secret access key",
    ),
    ("aws_access_key_id", f"id {AWS_ID} here", AWS_ID, "AWS access key id"),
    (
        "gitlab_personal_access_token",
        "glpat-" + "xYz12AbC34dEf56GhI78",
        "xYz12AbC34dEf56GhI78",
        "GitLab token",
    ),
    (
        "gitlab_deploy_token",
        "gldt-" + "Ab12Cd34Ef56Gh78Ij90Kl",
        "Ab12Cd34Ef56Gh78Ij90Kl",
        "GitLab token",
    ),
    (
        "hugging_face_token",
        "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
        "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
        "Hugging Face token",
    ),
    (
        "stripe_live_secret_key",
        "sk_" + "live_4eC39HqLyjWDarjtT1zdp7dc",
        "4eC39HqLyjWDarjtT1zdp7dc",
        "Stripe key",
    ),
    (
        "stripe_live_restricted_key",
        "rk_" + "live_4eC39HqLyjWDarjtT1zdp7dc",
        "4eC39HqLyjWDarjtT1zdp7dc",
        "Stripe key",
    ),
    (
        "stripe_test_secret_key",
        "sk_" + "test_4eC39HqLyjWDarjtT1zdp7dc",
        "4eC39HqLyjWDarjtT1zdp7dc",
        "Stripe key",
    ),
    (
        "slack_bot_token",
        "xox" + "b-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "AbCdEfGhIjKlMnOpQrStUvWx",
        "Slack token",
    ),
    (
        "slack_user_token",
        "xox" + "p-1234567890-1234567890-1234567890-abcdef0123456789",
        "abcdef0123456789",
        "Slack token",
    ),
    (
        "slack_app_token",
        "xap" + "p-1-A0123456789-1234567890123-abcdef0123",
        "abcdef0123",
        "Slack token",
    ),
    (
        "slack_legacy_workspace_token",
        "xox" + "a-2-AbCdEf0123456789",
        "AbCdEf0123456789",
        "Slack token",
    ),
    (
        "slack_webhook_url",
        "https://hooks.slack.com/services/" + "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "XXXXXXXXXXXXXXXXXXXXXXXX",
        "Slack webhook URL",
    ),
    ("rsa_private_key", pem("RSA "), PEM_BODY, "private key"),
    ("ec_private_key", pem("EC "), PEM_BODY, "private key"),
    ("openssh_private_key", pem("OPENSSH "), PEM_BODY, "private key"),
    ("pkcs8_private_key", pem(""), PEM_BODY, "private key"),
    ("encrypted_private_key", pem("ENCRYPTED "), PEM_BODY, "private key"),
    (
        "pgp_private_key_block",
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{PEM_BODY}\n-----END PGP PRIVATE KEY BLOCK-----",
        PEM_BODY,
        "private key",
    ),
    (
        "private_key_in_a_json_string",
        '{"private_key": "' + pem("").replace("\n", "\\n") + '"}',
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw",
        "private key",
    ),
    (
        "private_key_cut_short",
        "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY,
        "Mz" + "EfYyjiWA4R4",
        "private key",
    ),
    (
        "github_fine_grained_token",
        "github_pat_" + "11ABCDEFG0" + "aB3" * 25,
        "aB3aB3aB3aB3",
        "GitHub token",
    ),
    *[
        (f"github_{p}_token", f"{p}_" + "a1B2c3D4e5" * 4, "a1B2c3D4e5a1B2c3D4e5", "GitHub token")
        for p in ("ghp", "gho", "ghu", "ghs", "ghr")
    ],
    (
        "google_api_key",
        "key=AIza" + "SyA-1234567890abcdefghijklmnopqrstu&q=1",
        "SyA-1234567890abcdefghijklmnopqrstu",
        "Google API key",
    ),
    (
        "npm_token",
        "//registry.npmjs.org/:_authToken=npm_" + "a1B2c3D4e5" * 3 + "a1B2c3",
        "a1B2c3D4e5a1B2c3D4e5",
        "npm token",
    ),
    (
        "pypi_token",
        "password = pypi-AgEIcHlwaS5vcmc"
        + "CJGI2ZjY0NmM3LTRkMDMtNDE1Ni05MjE0LWUzNDc1ZTRkNjNmMwACKlsz",
        "CJGI2ZjY0NmM3LTRkMDMtNDE1Ni05MjE0",
        "PyPI token",
    ),
    (
        "json_web_token",
        "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        "dozjgNryP4J3jVmNHl0w5N",
        "JSON Web Token",
    ),
    (
        "password_in_an_env_file",
        "DB_HOST=db\nDB_PASSWORD=hunter2!x\n",
        "hunter2!x",
        "assigned secret",
    ),
    ("password_uppercase_in_shell", "PASSWORD=hunter2 ./deploy.sh", "hunter2", "assigned secret"),
    ("password_exported_quoted", "export PGPASSWORD='s3 cr3t'", "s3 cr3t", "assigned secret"),
    ("passwd_in_yaml", "db:\n  user: app\n  passwd: hunter2\n", "hunter2", "assigned secret"),
    ("password_in_json", '{"user": "app", "password": "hunter2"}', "hunter2", "assigned secret"),
    ("password_in_escaped_json", '{\\"password\\": \\"hunter2\\"}', "hunter2", "assigned secret"),
    ("secret_assignment", "client_secret=Zq8-lT0w_yR4", "Zq8-lT0w_yR4", "assigned secret"),
    (
        "django_secret_key",
        'SECRET_KEY = "django-insecure-k3y"',
        "django-insecure-k3y",
        "assigned secret",
    ),
    (
        "token_in_a_query_string",
        "GET /feed?access_token=Qm9vbXRva2Vu&page=2",
        "Qm9vbXRva2Vu",
        "assigned secret",
    ),
    ("api_key_in_yaml", "api_key: 0123abcd4567ef", "0123abcd4567ef", "assigned secret"),
    (
        "credentials_in_a_url",
        "postgres://admin:hunter2hunter2@db.internal:5432/app",
        "hunter2hunter2",
        "password in a URL",
    ),
    (
        "basic_auth_header",
        "Authorization: Basic " + "dXNlcjpodW50ZXIy",
        "dXNlcjpodW50ZXIy",
        "basic auth credentials",
    ),
    (
        "bearer_token_header",
        "Authorization: Bearer " + "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5",
        "Zm9vYmFyYmF6cXV4",
        "bearer token",
    ),
]


@pytest.mark.parametrize(
    ("text", "secret", "kind"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES]
)
def test_secret_shape_is_redacted(text: str, secret: str, kind: str) -> None:
    """The secret is replaced by a placeholder naming its kind, and reported as that kind."""
    shown, found = redact_text(text, where="message 1")
    assert secret not in shown
    assert f"[redacted {kind}]" in shown
    assert kind in {f.kind for f in found}


def test_an_assignment_keeps_its_name_and_loses_only_its_value() -> None:
    """The ticket still says which variable held a secret, so the editor can follow the prompt."""
    shown, _ = redact_text("DB_USER=app DB_PASSWORD=hunter2 ./run", where="message 1")
    assert shown == "DB_USER=app DB_PASSWORD=[redacted assigned secret] ./run"


def test_a_url_keeps_its_host_when_its_credentials_go() -> None:
    """Only the user and password of a URL are replaced; where it points stays readable."""
    shown, _ = redact_text("https://admin:pa55w0rd@example.com/x", where="message 1")
    assert shown == "https://[redacted password in a URL]@example.com/x"


def _png_data_uri() -> str:
    """Return a data URI of 3 KB of seeded random bytes, like an inline image."""
    data = random.Random(18).randbytes(3000)
    return "data:image/png;base64," + base64.b64encode(data).decode()


ORDINARY = [
    ("git_sha", "fixed in 3f2a9c1e5b7d9f1a3c5e7b9d1f3a5c7e9b1d3f5a and 3f2a9c1"),
    (
        "sha256_digest",
        "sha256:" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    ),
    ("uuid", "request 123e4567-e89b-12d3-a456-426614174000 failed"),
    ("base64_image", _png_data_uri()),
    ("long_words", "pneumonoultramicroscopicsilicovolcanoconiosis internationalization"),
    ("long_hyphenated_identifier", "the risk-assessment-for-the-new-feature-flags ticket"),
    (
        "python_type_annotations",
        "def login(user: str, password: str, token: Optional[str]) -> bool:",
    ),
    ("token_counts", "max_tokens=100, prompt_tokens: 12, tokens: 5, tokenizer=cl100k"),
    ("secrets_read_from_the_environment", 'token = os.environ["TOKEN"]\npassword=getpass()'),
    ("comparison", 'if password == "": raise ValueError'),
    ("json_schema_of_a_password", '{"password": {"type": "string"}, "token": "string"}'),
    ("environment_references", "password=$DB_PASSWORD token=${TOKEN}"),
    ("boolean_settings", "secret: false\ntoken: null"),
    ("short_prefixes", "sk-8 hf_x glpat- xoxb- npm_ AKIA eyJ"),
    ("email_and_url", "mail alice@example.com or see https://example.com/a:b"),
]


@pytest.mark.parametrize("text", [o[1] for o in ORDINARY], ids=[o[0] for o in ORDINARY])
def test_ordinary_text_is_not_redacted(text: str) -> None:
    """Hashes, ids, images, long words and code that names secrets without holding one stay."""
    assert redact_text(text, where="message 1") == (text, [])


ASSIGNMENT_FALSE_POSITIVES = [
    ("literal_none", "token=None"),
    ("angle_bracket_placeholder", "password=<your password>"),
    ("shell_variable_reference", "password=${PASSWORD} token=$TOKEN"),
    ("windows_variable_reference", "password: %PASSWORD%"),
    ("command_substitution", "password=$(cat /run/secrets/db)"),
    ("environment_lookup", "password=os.environ['DB_PASSWORD']"),
    ("attribute_reference", "password=self.password token=config.token"),
    ("settings_reference", "secret_key = settings.SECRET_KEY"),
    ("process_env_reference", "token = process.env.TOKEN"),
    ("variable_name_as_value", "password: DB_PASSWORD"),
    ("your_placeholder", "password: YOUR_PASSWORD\ntoken: your-token-here"),
    ("common_placeholder_words", "password=changeme secret: example token: TODO"),
    ("keyword_as_its_own_value", "password=password secret=secret"),
    ("masked_value", "password: ********"),
    ("repeated_character", "password=xxxxxxxx"),
    ("example_cut_short", "api_key: sk-... token: ..."),
    ("yaml_boolean", "secret: yes"),
    ("prose_after_the_keyword", "the token = the one we use; token: the next one"),
    ("short_value", "password: abc, token: 123"),
    ("question_naming_a_token", "No token: hello?"),
    ("sentence_naming_a_password", "Wrong password: Expired."),
    ("clause_naming_an_api_key", "Hi, api_key: missing; the secret: unknown!"),
]


@pytest.mark.parametrize(
    "text",
    [c[1] for c in ASSIGNMENT_FALSE_POSITIVES],
    ids=[c[0] for c in ASSIGNMENT_FALSE_POSITIVES],
)
def test_placeholder_or_reference_after_a_keyword_is_not_blanked(text: str) -> None:
    """A placeholder, a reference, a literal or prose after password=/token= stays readable."""
    assert redact_text(text, where="message 1") == (text, [])


REAL_ASSIGNED_SECRETS = [
    ("uppercase_word_with_a_digit", "PASSWORD=MONKEY1", "MONKEY1"),
    ("dotted_password", "password: Pass.word9", "Pass.word9"),
    ("plain_word_password", "password=hunter", "hunter"),
    ("four_characters", "token: a1b2", "a1b2"),
    ("value_starting_with_a_placeholder_word", "password=example123", "example123"),
    ("quoted_value_with_a_space", "export PGPASSWORD='s3 cr3t'", "s3 cr3t"),
    ("yaml_key_with_a_plain_word", "db:\n  passwd: hunter\n", "hunter"),
    ("word_after_an_equals_sign_in_a_sentence", "Log in with password=hunter today", "hunter"),
    ("value_with_a_digit_in_a_sentence", "Use the password: hunter2 please", "hunter2"),
    ("uppercase_value_in_a_sentence", "The token: HUNTERHUNTER", "HUNTERHUNTER"),
    ("mixed_case_value_in_a_sentence", "The token: hUnTeRhUnTeR", "hUnTeRhUnTeR"),
    ("long_random_letters_in_a_sentence", "my token: qzkxvbtrwplmnsdfgh", "qzkxvbtrwplmnsdfgh"),
    ("quoted_word_in_a_sentence", "The password: 'hunter'", "hunter"),
]


@pytest.mark.parametrize(
    ("text", "secret"),
    [c[1:] for c in REAL_ASSIGNED_SECRETS],
    ids=[c[0] for c in REAL_ASSIGNED_SECRETS],
)
def test_real_assigned_secret_is_still_redacted_after_the_tightening(
    text: str, secret: str
) -> None:
    """Values that only look like a placeholder word or a name are still secrets."""
    shown, found = redact_text(text, where="message 1")
    assert secret not in shown
    assert [f.kind for f in found] == ["assigned secret"]


MEGABYTE = 1_000_000

ADVERSARIAL = {
    "jwt_prefixes_joined_by_dashes": "eyJ-" * (MEGABYTE // 4),
    "jwt_segments_without_a_signature": "eyJAAAAAAAAA." * (MEGABYTE // 13),
    "openai_prefixes": "sk-" * (MEGABYTE // 3),
    "assignments_chained_with_equals": "password=" * (MEGABYTE // 9),
    "assignments_chained_with_colons": "token:" * (MEGABYTE // 6),
    "unclosed_double_quotes": 'password="' * (MEGABYTE // 10),
    "unclosed_single_quotes": "password='" * (MEGABYTE // 10),
    "escaped_quotes": '\\"password\\": \\"' * (MEGABYTE // 16),
    "escapes_in_an_unclosed_string": 'token: "' + "\\a" * (MEGABYTE // 2),
    "pem_headers_without_a_key": "-----BEGIN " * (MEGABYTE // 11),
    "pem_blocks_never_ended": "-----BEGIN PRIVATE KEY-----" * (MEGABYTE // 27),
    "aws_key_ids_in_a_row": (AWS_ID + " ") * (MEGABYTE // 21),
    "aws_key_id_before_endless_base64": AWS_ID + " " + "a/" * (MEGABYTE // 2),
    "url_credentials_never_followed_by_at": "://a:b" * (MEGABYTE // 6),
    "bearer_words": "bearer " * (MEGABYTE // 7),
    "basic_auth_headers": "authorization: basic " * (MEGABYTE // 21),
    "slack_webhook_paths": "hooks.slack.com/services/" * (MEGABYTE // 25),
    "one_long_word": "a" * MEGABYTE,
    "questions_naming_tokens": "No token: hello? " * (MEGABYTE // 17),
}


@pytest.mark.parametrize("text", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_a_megabyte_built_to_backtrack_redacts_well_under_a_second(text: str) -> None:
    """No pattern backtracks on hostile input: a megabyte aimed at each takes < 1 s of CPU."""
    # CPU time, not wall time, and the best of three: other processes on a busy machine do
    # not count against it, while a quadratic pattern takes minutes on a megabyte.
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        redact_text(text, where="message 1")
        best = min(best, time.process_time() - start)
        if best < 1.0:
            break
    assert best < 1.0
