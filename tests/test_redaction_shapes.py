"""Credential shapes people paste, in the text agents put around them: each case builds a
fake credential from its documented shape at run time (none is real) and checks the
redactor takes it out, on its own, inside a JSON payload (the writer's gate included) and
JSON-escaped inside a tool result. The near misses beside them must stay readable."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import uuid
from collections.abc import Callable

import pytest

from contracts.redaction import Redactor, generate, marker

# (id, build) -> (text, the credential that must not survive)
Case = Callable[[], tuple[str, str]]


def _pw() -> str:
    return generate("<A:10>9<A:6>")


def _pem_b64() -> str:
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + generate("<B:64>\n<B:64>\n")
    return base64.b64encode((pem + "-----END RSA PRIVATE KEY-----\n").encode()).decode()


def _with(fmt: str, secret: str) -> tuple[str, str]:
    return fmt.format(s=secret), secret


CASES: dict[str, Case] = {
    "gcp-access-token": lambda: _with(
        "$ gcloud auth print-access-token\n{s}\n", generate("ya29.<W:120>")
    ),
    "azure-client-secret": lambda: _with(
        "The secret value is {s} (copy it now)", generate("<A:3>8Q~<W:34>")
    ),
    "azure-sas-url": lambda: _with(
        "az storage blob generate-sas ... -> https://a.blob.core.windows.net/c/b?sv=2022-11-02"
        "&se=2030-01-01&sr=b&sp=r&sig={s}",
        generate("<A:30>%2B<A:10>%3D"),
    ),
    "bitbucket-app-password": lambda: _with("use {s} as the password", generate("ATBB<A:32>")),
    "stripe-webhook-secret": lambda: _with(
        "Ready! Your webhook signing secret is {s} (^C to quit)", generate("whsec_<A:32>")
    ),
    "npmrc-uuid-token": lambda: _with(
        "$ cat ~/.npmrc\n//registry.example.org/:_authToken={s}\n", str(uuid.uuid4())
    ),
    "npmrc-auth": lambda: _with(
        "_auth={s}\nalways-auth=true", base64.b64encode(("me:" + _pw()).encode()).decode()
    ),
    "docker-config-json": lambda: _with(
        '$ cat ~/.docker/config.json\n{{\n  "auths": {{\n    "registry.example.org": {{\n'
        '      "auth": "{s}"\n    }}\n  }}\n}}',
        base64.b64encode(("me:" + _pw()).encode()).decode(),
    ),
    "docker-pat": lambda: _with(
        "echo {s} | docker login -u me --password-stdin", generate("dckr_pat_<W:27>")
    ),
    "docker-login-p": lambda: _with("docker login -u me -p {s} registry.example.org", _pw()),
    "putty-ppk": lambda: _with(
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: k\nPublic-Lines: 2\n"
        + generate("<B:64>\n<B:4>\n")
        + "Private-Lines: 1\n{s}\nPrivate-MAC: "
        + generate("<H:64>"),
        generate("<B:44>"),
    ),
    "netrc": lambda: _with(
        "$ cat ~/.netrc\nmachine api.example.com\n  login me\n  password {s}\n", _pw()
    ),
    "netrc-one-line": lambda: _with("machine git.example.org login me password {s}", _pw()),
    "redis-password-only": lambda: _with("REDIS_URL=redis://:{s}@cache:6379/0", _pw()),
    # a raw @ (libraries split the authority at its last @) or %40 in the password
    "url-password-holding-at": lambda: _with(
        "DATABASE_URL=postgres://app:{s}@db:5432/app", generate("p@<A:10>9<A:4>")
    ),
    "url-password-holding-encoded-at": lambda: _with(
        "amqp://app:{s}@rabbit:5672/", generate("p%40<A:10>9<A:4>")
    ),
    "authorization-token": lambda: _with(
        "curl -H 'Authorization: token {s}' https://api.example.com/user",
        generate("<W:20>4<W:19>"),
    ),
    "authorization-basic-json": lambda: _with(
        '{{"headers": {{"Authorization": "Basic {s}"}}}}',
        base64.b64encode(("me:" + _pw()).encode()).decode(),
    ),
    "kubernetes-tls-secret": lambda: _with(
        "kind: Secret\ntype: kubernetes.io/tls\ndata:\n  tls.key: {s}\n", _pem_b64()
    ),
    "curl-u": lambda: _with("curl -u me:{s} https://api.example.com", _pw()),
    "curl-user": lambda: _with("curl --user 'me:{s}' https://api.example.com", _pw()),
    "mysql-p": lambda: _with("mysql -h db -u root -p{s} app", _pw()),
    "mysqldump-p": lambda: _with("mysqldump -uroot -p'{s}' app > dump.sql", _pw()),
    "sshpass-p": lambda: _with("sshpass -p {s} ssh me@host", _pw()),
    "terraform-token": lambda: _with(
        'credentials "app.terraform.io" {{\n  token = "{s}"\n}}',
        # each part begins with a letter: read as a dotted identifier by the old rules
        generate("<a:1><A:13>.atlasv1.<a:1><A:66>"),
    ),
    "vault-legacy-token": lambda: _with("export VAULT_TOKEN={s}", generate("s.<A:12>7<A:11>")),
    "mailgun-key": lambda: _with(
        "curl -s --user 'api:{s}' https://api.mailgun.example/v3/x/messages",
        generate("key-<H:32>"),
    ),
    "datadog-app-key": lambda: _with("DD_APP_KEY={s}", generate("<H:40>")),
    "datadog-app-key-header": lambda: _with("DD-APPLICATION-KEY: {s}", generate("<H:40>")),
    "sentry-user-token": lambda: _with("{s}", generate("sntryu_<H:64>")),
    "discord-bot-token-any-name": lambda: _with("BOT={s}", generate("MT<W:24>.<W:6>.<W:38>")),
    "telegram-api-url": lambda: _with(
        "GET https://api.telegram.org/bot{s}/getMe", generate("<D:10>:AA<W:33>")
    ),
    "firebase-fcm-key": lambda: _with(
        "Authorization: key={s}", generate("AAAA<W:7>:APA91b<W:134>")
    ),
    "bitbucket-access-token": lambda: _with("{s}", generate("ATCTT3xFfGN0<W:170>=<H:8>")),
    "openrouter-key-piped": lambda: _with(
        "echo {s} | llm keys set openrouter", generate("sk-or-v1-<H:64>")
    ),
    "deepseek-style-key": lambda: _with("curl -H 'x: {s}'", generate("sk-<H:32>")),
    "tavily-key-positional": lambda: _with('TavilyClient("{s}")', generate("tvly-dev-<A:32>")),
    "langfuse-secret-key": lambda: _with("{s}", generate("sk-lf-<H:8>-<H:4>-<H:4>-<H:4>-<H:12>")),
    # A random token that holds a placeholder's word in mixed case (1 in ~10^5 of 120
    # characters holds "your_" ignoring case) is no placeholder.
    "token-holding-sample-in-mixed-case": lambda: _with("{s}", generate("ghp_<A:10>sAmPlE<A:20>")),
    "token-holding-your-in-mixed-case": lambda: _with("{s}", generate("ya29.<W:40>YOUr_<W:40>")),
    "aws-credentials-csv": lambda: _with(
        "User name,Password,Access key ID,Secret access key\nci,,"
        + generate("AKIA<U:16>")
        + ",{s}\n",
        generate("<B:20>Q<B:19>"),
    ),
    # an agent reading another agent's transcript: JSON in a JSON string in a JSON string
    "json-in-json-in-json": lambda: _with(
        json.dumps({"input": json.dumps({"cmd": json.dumps({"password": "{s}"})})})
        .replace("{", "{{")
        .replace("}", "}}")
        .replace("{{s}}", "{s}"),
        _pw(),
    ),
    "heroku-api-key-uuid": lambda: _with("HEROKU_API_KEY={s}", str(uuid.uuid4())),
    "vault-approle-secret-id-uuid": lambda: _with(
        '{{"data": {{"secret_id": "{s}", "secret_id_ttl": 0}}}}', str(uuid.uuid4())
    ),
    "cookie-header": lambda: _with(
        "> GET / HTTP/1.1\r\n> Cookie: theme=dark; sessionid={s}\r\n> Accept: */*",
        generate("<W:40>1"),
    ),
    "set-cookie": lambda: _with(
        "< Set-Cookie: sessionid={s}; Path=/; HttpOnly", generate("<W:40>1")
    ),
    "dockerconfigjson-base64": lambda: _with(
        "data:\n  .dockerconfigjson: {s}\ntype: kubernetes.io/dockerconfigjson",
        base64.b64encode(
            json.dumps({"auths": {"registry.example.org": {"auth": _pw()}}}).encode()
        ).decode(),
    ),
    # a value runs to the end of its assignment as the syntax delimits it, not to a , ; or
    # space inside it
    "env-value-holding-comma-and-semicolon": lambda: _with(
        "DB_PASSWORD={s}\nDB_HOST=db", generate("p@<A:4>,<A:4>9;<A:4>")
    ),
    "shell-single-quoted-value-holding-space": lambda: _with(
        "export DB_PASSWORD='{s}'", generate("p@<A:4> <A:4>9;<A:4>")
    ),
    "json-value-holding-comma-and-space": lambda: _with(
        '{{"password": "{s}", "user": "me"}}', generate("p@<A:4>, <A:4>9;<A:4>")
    ),
    "yaml-double-quoted-value": lambda: _with(
        'client_secret: "{s}"\nclient_id: app', generate("<A:6>,<A:6>7 <A:6>")
    ),
    "flag-quoted-value-holding-semicolon": lambda: _with(
        "psql --password '{s}' -h db", generate("<A:6>;<A:6>7")
    ),
    # quoted prose after a value: its first word is judged alone, as an unquoted one
    "quoted-value-followed-by-prose": lambda: _with(
        'password: "{s} is the new one, keep it"', generate("<A:10>9<A:3>")
    ),
    # a secret-named query parameter, up to the next & or #
    "query-key": lambda: _with(
        "curl 'https://maps.example.com/api/geocode?address=x&key={s}&page=2'",
        generate("<A:30>7"),
    ),
    "query-api-key-before-fragment": lambda: _with(
        "GET /v1/items?api_key={s}#top HTTP/1.1", generate("<A:24>5")
    ),
    "query-access-token-in-fragment": lambda: _with(
        "redirected to https://app.example.com/cb#access_token={s}&token_type=Bearer",
        generate("<W:40>3"),
    ),
    "query-token-html-escaped": lambda: _with(
        '<a href="/feed?user=me&amp;token={s}&amp;page=2">', generate("<A:20>1")
    ),
    "query-client-secret": lambda: _with(
        "POST /oauth/token?client_id=app&client_secret={s}&grant_type=client_credentials",
        generate("<A:32>8"),
    ),
    "query-s3-signature": lambda: _with(
        "https://b.s3.example.com/o.tar?X-Amz-Expires=60&X-Amz-Signature={s}&x-id=GetObject",
        generate("<H:64>"),
    ),
    "query-signature": lambda: _with(
        "https://cdn.example.com/v.mp4?expires=1700000000&signature={s}", generate("<W:43>9")
    ),
    # a raw / in a URL's password (an invalid URL, but pasted): to the @ before the host
    "url-password-holding-slash": lambda: _with(
        "DATABASE_URL=postgres://app:{s}@db.internal:5432/app", generate("<A:6>/<A:6>9")
    ),
    "url-password-holding-slash-json": lambda: _with(
        '{{"broker": "amqp://svc:{s}@rabbit/vhost"}}', generate("<A:4>9/<A:4>/<A:4>")
    ),
    # values printed as a table rather than assigned
    "vault-write-secret-id-table": lambda: _with(
        "$ vault write -f auth/approle/role/ci/secret-id\nKey                   Value\n"
        "---                   -----\nsecret_id             {s}\n"
        "secret_id_accessor    " + str(uuid.uuid4()) + "\nsecret_id_ttl         0s\n",
        str(uuid.uuid4()),
    ),
    "vault-token-create-table": lambda: _with(
        "Key                  Value\r\n---                  -----\r\ntoken                {s}\r\n"
        "token_accessor       " + generate("<A:24>") + "\r\ntoken_duration       768h\r\n",
        generate("<A:20>3<A:3>"),
    ),
    "powershell-env-listing": lambda: _with(
        "PS C:\\> Get-ChildItem Env:\n\nName                           Value\n"
        "----                           -----\nHOMEPATH                       \\Users\\me\n"
        "SERVICE_PASSWORD               {s}\nUSERNAME                       me\n",
        generate("<A:12>4<A:4>"),
    ),
    "kubectl-secret-yaml": lambda: _with(
        "$ kubectl get secret app -o yaml\napiVersion: v1\ndata:\n  DATABASE_URL: {s}\n"
        "kind: Secret\nmetadata:\n  name: app\ntype: Opaque\n",
        base64.b64encode(("postgres://app:" + _pw() + "@db/app").encode()).decode(),
    ),
    "kubectl-secret-list-yaml": lambda: _with(
        "apiVersion: v1\nitems:\n- apiVersion: v1\n  data:\n    api: {s}\n  kind: Secret\n",
        base64.b64encode(_pw().encode()).decode(),
    ),
    # env | grep prints assignments: the candidate rules' form already
    "env-grep": lambda: _with("$ env | grep -i token\nGITLAB_TOKEN_FILE_2={s}\n", _pw()),
    # a token split across two lines: a terminal wrapped it at 80 columns, or a shell
    # line went on after a backslash
    "token-wrapped-by-a-terminal": lambda: _wrapped(generate("ghp_<A:36>"), 80, "\n"),
    "long-token-wrapped-by-a-terminal": lambda: _wrapped(
        generate("sk-ant-api03-<W:93>AA"), 100, "\r\n"
    ),
    "aws-key-id-wrapped-by-a-terminal": lambda: _wrapped(generate("AKIA<U:16>"), 80, "\n"),
    "token-split-by-a-shell-continuation": lambda: (
        "$ export GITHUB_TOKEN="
        + generate("ghp_<A:16>")
        + "\\\n"
        + (rest := generate("<A:20>"))
        + "\n$ gh auth status",
        rest,
    ),
}


def _wrapped(token: str, width: int, newline: str) -> tuple[str, str]:
    """``token`` at the end of a prompt line a terminal ``width`` columns wide wrapped, 16
    of its characters before the break (the part after it is what must not survive)."""
    prompt = "$ curl -s https://api.example.com/user -H 'Authorization: token "
    line = (prompt + " " * width)[: width - 16]
    return f"{line}{token[:16]}{newline}{token[16:]}' | jq .login", token[16:]


@pytest.mark.parametrize("build", CASES.values(), ids=CASES.keys())
def test_a_pasted_shape_is_redacted_wherever_it_sits(build: Case) -> None:
    text, secret = build()
    redactor = Redactor()
    assert secret not in redactor.redact(text)
    # as an event's payload: the gate passes it and the walk takes it out
    payload = {"content": [{"type": "tool_result", "text": text}], "title": text}
    assert redactor.payload_might_hold(payload, json.dumps(payload))
    out, changed = redactor.redact_payload("tool/result", payload)
    assert changed and secret not in json.dumps(out)
    # JSON-escaped inside a tool's output (a tool printed a JSON document holding it)
    escaped = json.dumps({"stdout": text})
    assert redactor.might_hold(json.dumps({"output": escaped}))
    assert json.dumps(secret)[1:-1] not in redactor.redact(escaped)


# Cases whose value ends where its syntax ends it: exactly the value becomes the marker,
# and what follows it (the next query parameter, the closing quote) stays.
EXACT = {
    "env-value-holding-comma-and-semicolon": "password",
    "shell-single-quoted-value-holding-space": "password",
    "json-value-holding-comma-and-space": "password",
    "yaml-double-quoted-value": "secret",
    "flag-quoted-value-holding-semicolon": "password",
    "query-key": "api-key",
    "query-api-key-before-fragment": "api-key",
    "query-access-token-in-fragment": "token",
    "query-token-html-escaped": "token",
    "query-client-secret": "secret",
    "query-s3-signature": "url-signature",
    "query-signature": "url-signature",
    "url-password-holding-slash": "password-in-url",
    "url-password-holding-slash-json": "password-in-url",
}


@pytest.mark.parametrize(("case", "kind"), EXACT.items(), ids=EXACT.keys())
def test_exactly_the_value_is_redacted(case: str, kind: str) -> None:
    text, secret = CASES[case]()
    assert Redactor().redact(text) == text.replace(secret, marker(kind))


NEAR_MISSES = [
    "commit " + hashlib.sha1(os.urandom(8)).hexdigest(),
    f"request {uuid.uuid4()}",
    base64.b64encode(b"a long configuration value that is not a secret at all").decode(),
    "password: ",
    "token_count=123456",
    "docker run -p 8080:80 -p 443:443 nginx",
    "mysql -u root -p app",
    'curl -u "$USER:$PASS" https://x.test',
    "git push -u origin feature/abc-123:feature/abc-123",
    "Authorization: token ${{ secrets.GITHUB_TOKEN }}",
    "authorization: required_for_all_routes",
    "a key-value store",
    "machine learning login page password reset",
    "secret = settings.SECRET_KEY; apiKey: process.env.OPENAI_API_KEY",
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t" + generate("<B:80>"),
    "docker login -u me -p $DOCKER_PASSWORD",
    '{"auths": {"ghcr.io": {}}, "credsStore": "osxkeychain"}',
    "http://[::1]:8080/path and redis://localhost:6379/0",
    "https://registry.example:8443/@scope/pkg and see https://a:b@c and x@y",
    "npm config get _auth",
    "model.layers.encoder.attention",
    "AKIAIOSFODNN7EXAMPLE commit " + hashlib.sha1(os.urandom(8)).hexdigest(),
    f'"session_id": "{uuid.uuid4()}", "idempotency_token": "{uuid.uuid4()}"',
    "cookies: 3 and the Cookie: header carries them",
    "GITHUB_TOKEN=ghp_YOUR_TOKEN_HERE_0000000000000000000 and ghp_Example",
    # the end of a value: a , or ; that ends it, another name=, prose in quotes
    "Server=db;Password=<set me>;Database=app",
    "f(password=None, token=tok, y=2); max_tokens=4096;",
    '"token": "the value is kept in vault 2", "secret": "see section 4.2 of the docs"',
    "password: required, token: optional; secret: none",
    # a query's parameters that are not secret-named, or short
    "https://api.example.com/v1/items?page=2&key=name&sort_key=created_at2024x&keyword=a1b2c3d4e5",
    "https://x.test/search?q=abc&token=short1&sig_figs=12345678",
    # a port, then a path holding an @: no password
    "http://localhost:3000/api/users/me@example.com and https://h.example:8443/s?to=me@x.org",
    "https://social.example:443/@alice and file://C:/Users/me@corp/x",
    # tables whose rows are not secret-named, or not secret: an accessor, a ConfigMap
    "Key                   Value\n---                   -----\nrole_id               "
    + str(uuid.uuid4())
    + "\ntoken_accessor        "
    + generate("<A:24>")
    + "\ntoken_policies        [default]\nsecret_id_ttl         0s",
    "Name                           Value\n----                           -----\n"
    "COMPUTERNAME                   WS-"
    + generate("<C:12>")
    + "\nTOKEN_PATH                     C:\\t",
    "apiVersion: v1\ndata:\n  LOG_LEVEL: debug\n  mode: cHJvZHVjdGlvbjE=\nkind: ConfigMap",
    "| key | value |\n| --- | ----- |\n| token | " + generate("<A:20>1") + " |",
    # lines that end in a run of token characters and go on with another: not a wrap
    "scikit-learn and sk-learn-compatible-estimators-registry\nare listed in the docs",
    "ghp_and_gho_prefixes_are_documented\nAnotherParagraphStartsHere123 on the next line",
    generate("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC<B:32>\n<B:64>\n<B:64>"),
]


@pytest.mark.parametrize(
    "text", NEAR_MISSES, ids=[f"near-miss-{n}" for n in range(len(NEAR_MISSES))]
)
def test_a_near_miss_of_the_new_shapes_stays_readable(text: str) -> None:
    assert Redactor().redact(text) == text
