"""A labelled corpus for search relevance: generated sessions plus planted "needles".

Over 400 lines: the labelled needles and the sessions that hide them are one corpus.

``build(config)`` returns the events (the event contract of ``bench.corpus``) and labelled
queries ``(category, query, cwd, expected session id, caller session id)``. Everything is
deterministic by seed. Nothing comes from real transcripts: the needle texts below are
written for this bench, and the background is ``bench.corpus``'s generator.

Layout: a few workspaces, each with ``noise_sessions`` sessions of generated agent work and
one empty caller session (the session a query is asked from; it is excluded from results).
For each needle, one session in a workspace holds the labelled content among generated
filler steps, and one or more distractor sessions in the same workspace share some of the
query's words but not all of them, so ranking matters (for every third natural-language
question, one distractor is a tool output holding all its words scattered over grep hits:
the conversational answer must not be drowned by it). Needles are spread over the
workspaces round-robin in a seed-shuffled order.

Categories (see ``CATEGORIES``): exact error fragments from tool output, identifier parts
and whole identifiers, paths, natural-language questions and paraphrases, English word
forms, Chinese and Japanese words inside unspaced sentences, Russian word forms, needles
near the end of tool outputs far past 64 KiB, and forked/resumed sessions that copy their
parent's events and then continue with distinct work.

Every label is findable by a good engine in principle: each content word of a query occurs
in the expected session, exactly or as a Snowball word form, an identifier part or a CJK
substring (``bench.relevance_reference.missing_terms`` checks this; the smoke test asserts
it).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from bench import corpus
from bench import relevance_conversation as rconv
from bench import vocabulary as vocab
from bench.relevance_reference import FUNCTION_WORDS

CATEGORIES: Final = (
    "error_fragment",
    "identifier_part",
    "path",
    "natural_language",
    "word_form",
    "cjk",
    "non_english",
    "long_output",
    "fork",
    "paraphrase",
    # Issue 29's failure modes at scale (bench.relevance_probes); last, so the needles
    # above keep their workspaces and texts.
    "pasted_error",
    "focused",
    "rare_word",
    # Issue 34's conversational memory (bench.relevance_conversation): workspaces of their
    # own, after everything else.
    *rconv.CATEGORIES,
)
# Questions in other words than their session's: lexical search cannot answer them (it is
# what hybrid is for), so they are exempt from the lexical targets and from the check that
# every query word is in the expected session.
IN_OTHER_WORDS: Final = frozenset({"paraphrase", rconv.IN_OTHER_WORDS})

# A planted turn: ("user" | "assistant", text), ("run", tool output), ("code", a tool
# output that is source or grep lines), ("read" | "edit", a file path).
Turn = tuple[str, str]


@dataclass(frozen=True, slots=True)
class RelevanceConfig:
    seed: int = 11
    workspaces: int = 3
    noise_sessions: int = 45  # per workspace
    # Only the conversational-memory workspaces' needles (issue 42: hybrid against lexical
    # on them in minutes, not the hour embedding the whole corpus takes).
    conversations_only: bool = False
    noise_events: int = 40  # per noise session
    long_kib: int = 200  # size of a long tool output (needles sit in its last KiB)
    # Needles per category at most (all of them when None): a smoke run uses a few.
    per_category: int | None = None

    def __post_init__(self) -> None:
        if self.workspaces < 1 or self.noise_sessions < 0 or self.long_kib < 70:
            raise ValueError("workspaces >= 1, noise_sessions >= 0, long_kib >= 70")


@dataclass(frozen=True, slots=True)
class LabelledQuery:
    category: str
    query: str
    cwd: str
    expected: str  # the session a good answer ranks first (for fork originals: top 5)
    caller: str  # the session the query is asked from: excluded from results


@dataclass(frozen=True, slots=True)
class RelevanceCorpus:
    config: RelevanceConfig
    workspaces: tuple[str, ...]
    callers: dict[str, str]  # cwd -> caller session id
    events: list[dict[str, Any]]
    queries: tuple[LabelledQuery, ...]
    # Per needle session: the texts of its near misses (its distractors' planted texts and
    # its spec's variants), and the words no distractor may hold (bench.relevance_scale).
    near_misses: dict[str, tuple[str, ...]] = field(default_factory=dict)
    reserved: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Spec:
    """One needle: what its session says, the queries that must find it, and distractor
    sessions (each a tuple of turns) that share part of the queries' words."""

    turns: tuple[Turn, ...]
    queries: tuple[str, ...]
    distractors: tuple[tuple[Turn, ...], ...] = field(default_factory=tuple)
    # For the at-scale corpus (bench.relevance_scale): more near-miss texts, and words
    # (the rare word of a partial match) no distractor may hold.
    variants: tuple[str, ...] = ()
    reserved: tuple[str, ...] = ()


# --- needle texts ------------------------------------------------------------------------

# (line in tool output, query, distractor's line)
ERRORS: Final = (
    (
        "ConnectionResetError: [Errno 104] Connection reset by peer",
        "ConnectionResetError: [Errno 104]",
        "ConnectionResetError: [Errno 32] Broken pipe",
    ),
    (
        "OSError: [Errno 28] No space left on device: '/var/lib/postgresql/data'",
        "No space left on device",
        "OSError: [Errno 2] No such file or directory: '/var/lib/postgresql/data'",
    ),
    (
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: "
        "invalid start byte",
        "can't decode byte 0xff",
        "UnicodeEncodeError: 'ascii' codec can't encode character '\\xe9' in position 3",
    ),
    (
        "ModuleNotFoundError: No module named 'pyarrow'",
        "No module named 'pyarrow'",
        "ModuleNotFoundError: No module named 'polars'",
    ),
    (
        "ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify "
        "failed: unable to get local issuer certificate",
        "CERTIFICATE_VERIFY_FAILED",
        "ssl.SSLError: [SSL: WRONG_VERSION_NUMBER] wrong version number",
    ),
    (
        "fatal: refusing to merge unrelated histories",
        "refusing to merge unrelated histories",
        "fatal: Not possible to fast-forward, aborting.",
    ),
    (
        "error[E0502]: cannot borrow `self.buf` as mutable because it is also borrowed as "
        "immutable",
        "error[E0502]: cannot borrow",
        "error[E0382]: borrow of moved value: `frame`",
    ),
    (
        "TypeError: Cannot read properties of undefined (reading 'map')",
        "Cannot read properties of undefined (reading 'map')",
        "TypeError: Cannot read properties of null (reading 'length')",
    ),
    (
        "panic: runtime error: invalid memory address or nil pointer dereference",
        "nil pointer dereference",
        "panic: runtime error: index out of range [3] with length 3",
    ),
    (
        "sqlite3.IntegrityError: UNIQUE constraint failed: invoices.customer_id, invoices.number",
        "UNIQUE constraint failed: invoices.customer_id",
        "sqlite3.IntegrityError: NOT NULL constraint failed: invoices.total",
    ),
    (
        "ERROR: Could not find a version that satisfies the requirement torch==2.9.1",
        "Could not find a version that satisfies the requirement",
        "ERROR: No matching distribution found for torch==2.9.1",
    ),
    ("npm ERR! code ERESOLVE", "npm ERR! code ERESOLVE", "npm ERR! code ENOENT"),
    (
        "java.lang.OutOfMemoryError: GC overhead limit exceeded",
        "GC overhead limit exceeded",
        "java.lang.OutOfMemoryError: Java heap space",
    ),
    (
        "redis.exceptions.BusyLoadingError: Redis is loading the dataset in memory",
        "BusyLoadingError",
        "redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379.",
    ),
)

# (sentence holding the identifier, queries, distractor sentences: one session each)
IDENTIFIERS: Final = (
    (
        "Moved the cosine search into `SqliteVectorIndex.query()` so the store owns it.",
        ("SqliteVector", "SqliteVectorIndex"),
        ("The `SqliteStore` keeps the rows.", "A `VectorClock` orders the replicas."),
    ),
    (
        "if attempt_no >= self.maxAttempts: raise RetryExhausted(attempt_no)",
        ("attempts", "maxAttempts"),
        ("self.maxRetries = 5 is read from the environment.",),
    ),
    (
        "def build_retry_policy_v2(config): returns the policy the client uses",
        ("retry_policy", "build_retry_policy_v2"),
        ("retry_budget = 3 for the uploader.", "Call policy_cache.clear() on reload."),
    ),
    (
        "parseHttpDateHeader('Tue, 03 Dec 2026 10:00:00 GMT') returned None for RFC 850.",
        ("HttpDate", "parseHttpDateHeader"),
        ("The `HttpClient` sets a user agent.", "`parseDate` accepts ISO 8601 only."),
    ),
    (
        "The helm chart names the pod `ingest-batch-coalescer` now.",
        ("batch-coalescer", "coalescer"),
        ("Raised `ingest-batch-size` to 512.",),
    ),
    (
        "`payments.ledger.reconcile_daily` runs at 02:00 and posts a summary.",
        ("ledger.reconcile", "reconcile_daily"),
        ("`payments.ledger.export` writes a CSV per month.",),
    ),
    (
        "class TokenBucketRateLimiter: refills 20 permits per second.",
        ("RateLimiter", "TokenBucket"),
        ("The `RateCard` lists prices.", "A `LeakyBucket` smooths the bursts."),
    ),
    (
        "The old browsers go through `XMLHttpRequestShim` instead of fetch.",
        ("HttpRequest",),
        ("`HttpResponse` carries the status line.",),
    ),
    (
        "The alert fires when kafka_consumer_lag_seconds stays above 30 for 5 minutes.",
        ("consumer_lag", "lag_seconds"),
        ("kafka_producer_errors_total counts failed sends.",),
    ),
    (
        "`EventLoopStallDetector` logs a stack when the loop is blocked for 100 ms.",
        ("StallDetector", "stall"),
        ("`DeadlockDetector` runs every minute.",),
    ),
    (
        "Set checkpointIntervalMs to 5000 so replays stay short.",
        ("checkpointInterval",),
        ("flushIntervalMs defaults to 200.",),
    ),
    (
        "The `WidgetCacheWarmer` job fills the cache before the morning peak.",
        ("WidgetCacheWarmer",),
        ("`WidgetCache` is an LRU of 10k entries.", "Each `CacheWarmer` reads the top pages."),
    ),
    (
        "Extracted `useDebouncedSearchInput` so every list page shares the hook.",
        ("DebouncedSearch", "useDebouncedSearchInput"),
        ("`useSearchParams` keeps the filters in the URL.",),
    ),
)

# (path, query, distractor path)
PATHS: Final = (
    ("worker/store/sqlite.py", "store/sqlite.py", "tests/store/test_sqlite.py"),
    ("src/worker/runtime/lanes.py", "worker/runtime", "src/worker/tools/runtime_info.py"),
    (
        "web/src/components/DatePicker.tsx",
        "components/DatePicker",
        "web/src/components/TimePicker.tsx",
    ),
    ("deploy/k8s/ingest-deployment.yaml", "ingest-deployment.yaml", "deploy/k8s/ingest-svc.yaml"),
    (".github/workflows/release.yml", ".github/workflows/release.yml", ".github/workflows/ci.yml"),
    ("internal/raft/snapshot_test.go", "raft/snapshot_test.go", "internal/raft/snapshot.go"),
    ("docs/adr/0007-search-index.md", "0007-search-index", "docs/adr/0006-event-ids.md"),
    ("scripts/migrate_v3_to_v4.py", "migrate_v3_to_v4", "scripts/migrate_v2_to_v3.py"),
    ("/etc/nginx/conf.d/upstream.conf", "nginx/conf.d", "/etc/nginx/nginx.conf"),
    ("crates/parser/src/lexer.rs", "parser/src/lexer.rs", "crates/parser/src/ast.rs"),
    ("pkg/cache/lru.go", "cache/lru.go", "pkg/cache/ttl.go"),
    (
        "tests/fixtures/golden/invoice_2024.json",
        "fixtures/golden",
        "tests/fixtures/invoice_2023.json",
    ),
)

# (queries, user message, assistant reply, distractor user message, distractor reply)
QUESTIONS: Final = (
    (
        ("where did we fix the flaky date parsing test", "test that fails after midnight"),
        "The date parsing test is flaky again: it fails on CI a few minutes after midnight.",
        "Fixed it. The test compared against the local clock; it now freezes time at noon UTC, "
        "so the parsed date no longer drifts.",
        "Why is the invoice export test flaky?",
        "Fixed the export test by sorting the rows before comparing.",
    ),
    (
        ("how did we speed up the ingest of events", "why was event ingest slow"),
        "Ingest of events is slow: about 2,000 per second on the laptop. Can we speed it up?",
        "Batched the inserts into one transaction per 500 events and dropped the per-row "
        "fsync; ingest now runs at 40,000 events per second.",
        "Can we speed up the unit suite?",
        "Ran the suite in parallel with four processes.",
    ),
    (
        ("which session set up the nightly backup cron job",),
        "We need a nightly backup of the postgres database; nothing runs at night right now.",
        "Added a cron job at 02:30 that runs pg_dump and uploads the backup to the bucket; set "
        "up alerting in case it fails.",
        "The backup job failed last week.",
        "Restarted the job; the backup finished.",
    ),
    (
        ("when did we change the default timeout for the payment webhook",),
        "The payment webhook times out under load and the provider's retries pile up.",
        "Changed the default timeout for the payment webhook handler from 5 s to 20 s and made "
        "it configurable.",
        "What is the default timeout for the export endpoint?",
        "The default timeout there is 30 s.",
    ),
    (
        (
            "what was the fix for the memory leak in the image resizer",
            "image resizer grows in memory",
        ),
        "The image resizer grows to 3 GB after an hour; looks like a memory leak.",
        "Found it: every resized image kept a reference in the LRU. The fix evicts by size, "
        "and the resizer now stays at 300 MB.",
        "There is a memory leak in the websocket hub.",
        "Fixed the leak by closing idle connections.",
    ),
    (
        ("where did we decide to drop support for python 3.9",),
        "Should we keep Python 3.9? It blocks the new typing syntax.",
        "Decided: drop support for 3.9 in the next release; the minimum is now Python 3.10.",
        "Does the CLI support Python 3.12?",
        "Yes, support for 3.12 landed last month.",
    ),
    (
        ("how do we rotate the signing keys for the api tokens",),
        "How often should the signing keys for API tokens be rotated?",
        "Rotation happens every 30 days now: a new key signs, the old one still verifies for a "
        "week.",
        "The API tokens expire too quickly.",
        "Extended their lifetime to 24 h.",
    ),
    (
        ("did we ever figure out why the docker build cache misses",),
        "Every docker build misses the cache at the pip install layer.",
        "Figured it out: COPY . before pip install invalidated the layer; copying "
        "requirements.txt first keeps the cache warm.",
        "The docker image is 2 GB.",
        "Switched to a slim base image.",
    ),
    (
        ("where did we add pagination to the audit log endpoint",),
        "The audit log endpoint returns 50k rows at once and times out.",
        "Added cursor pagination to /audit/log: 200 rows per page with a next cursor.",
        "Add pagination to the users endpoint.",
        "Added offset pagination to /users.",
    ),
    (
        ("how did we handle the daylight saving time bug in the scheduler",),
        "The scheduler ran the 02:30 job twice on the daylight saving switch.",
        "Handled it: the scheduler now stores next-run times in UTC, so the clock change cannot "
        "repeat or skip a run. The bug is covered by a regression case.",
        "The scheduler UI shows the wrong zone.",
        "Fixed the zone bug in the UI.",
    ),
    (
        ("what did we do about the slow dashboard query on the orders table",),
        "The dashboard query on the orders table takes 9 seconds.",
        "Added a composite index on orders(status, created_at); the dashboard loads in 120 ms "
        "and is no longer slow.",
        "The orders export is slow.",
        "Streamed the export instead of building it in memory.",
    ),
    (
        ("where was the websocket reconnect backoff tuned",),
        "Clients hammer the server after a deploy: every websocket reconnects at once.",
        "Tuned the reconnect backoff: exponential from 1 s to 60 s with full jitter.",
        "The websocket hub drops messages.",
        "Added a bounded queue per client.",
    ),
)

# (sentence, query in another word form, distractor sentence)
WORD_FORMS: Final = (
    (
        "I analyzed the heap dump from the worker that crashed overnight.",
        "analyze heap dump",
        "Took a heap snapshot in the browser.",
    ),
    (
        "The billing tables were migrated to the new schema on Tuesday.",
        "billing table migration",
        "The billing service reads invoices.",
    ),
    (
        "Throttling the export worker stopped the 429 responses.",
        "throttled export",
        "The export produced a CSV.",
    ),
    (
        "We deduplicated webhook deliveries by idempotency key.",
        "deduplication webhook delivery",
        "Webhook payloads are logged.",
    ),
    (
        "Vacuuming the analytics database reclaimed 40 GB.",
        "vacuum analytics",
        "The analytics dashboard is slow.",
    ),
    (
        "Quarantined the flaky upload tests so the pipeline stays green.",
        "quarantine uploads",
        "Upload size limit raised to 50 MB.",
    ),
    (
        "Sharding the sessions table by tenant halved the p99.",
        "sharded tenants",
        "Tenant names are unique now.",
    ),
    (
        "Memoized the permission lookup; each request used to hit the database 40 times.",
        "memoization permission lookups",
        "Permission denied for the deploy user.",
    ),
    (
        "The invoice list is paginated on the server now.",
        "pagination invoice list",
        "Invoice totals are rounded to cents.",
    ),
    (
        "Debouncing the search box cut the requests by 80%.",
        "debounced search box",
        "The search box lost focus on mobile.",
    ),
    (
        "Compressed the nightly snapshots with zstd.",
        "compression snapshot",
        "Snapshots are kept for 7 days.",
    ),
    (
        "Profiling showed json encoding takes 40% of the request time.",
        "profiled json encoding",
        "json encoding of dates uses ISO 8601.",
    ),
    (
        "Benchmarking the parser on 1 GB of logs took 12 s.",
        "parser benchmarks",
        "The parser rejects trailing commas.",
    ),
    (
        "Ran the testing suite for the checkout flow twice.",
        "checkout tests",
        "Checkout button color changed.",
    ),
)

# (sentence, queries, reply without the query words, distractor sentence)
CJK: Final = (
    (
        "这个测试在持续集成里不稳定，昨天失败了三次。",
        ("测试", "持续集成", "这个测试在持续集成里不稳定"),
        "好的，我来看一下。",
        "这个测量结果在生产环境里很稳定。",
    ),
    ("数据库连接池在高并发下耗尽了。", ("连接池",), "好的，我来看一下。", "数据库的索引需要重建。"),
    (
        "我们把日志级别改成了警告，减少了磁盘写入。",
        ("日志级别",),
        "已经改好了。",
        "日志文件每天轮转一次。",
    ),
    ("缓存失效导致接口响应变慢。", ("缓存失效",), "我来看一下。", "接口响应的格式改成了JSON。"),
    ("部署脚本需要先备份配置文件。", ("配置文件",), "已经改好了。", "部署完成以后要检查健康状态。"),
    (
        "内存泄漏出现在图片处理模块里。",
        ("内存泄漏", "图片处理"),
        "我来看一下。",
        "图片上传的大小限制是十兆。",
    ),
    (
        "このテストはCIで不安定です。",
        ("テスト", "このテストはCIで不安定です"),
        "確認します。",
        "このテキストは翻訳が必要です。",
    ),
    (
        "データベースの移行スクリプトを修正しました。",
        ("移行スクリプト",),
        "ありがとうございます。",
        "スクリプトの実行時間を計測しました。",
    ),
    (
        "タイムアウトの設定を三十秒に変更しました。",
        ("タイムアウト",),
        "確認します。",
        "設定ファイルの場所を変更しました。",
    ),
    (
        "ログの出力が多すぎてディスクがいっぱいです。",
        ("ディスク",),
        "確認します。",
        "ログの出力形式をJSONにしました。",
    ),
    (
        "認証トークンの有効期限が切れています。",
        ("有効期限", "認証トークン"),
        "ありがとうございます。",
        "認証の画面を作り直しました。",
    ),
)

# (sentence, queries in other forms that Snowball's Russian stemmer conflates, distractor)
RUSSIAN: Final = (
    (
        "Половина тестов падали после обновления библиотеки.",
        ("тест падает", "тесты"),
        "Новый тест для парсера готов.",
    ),
    (
        "Ошибку подключения к базе данных исправили вчера.",
        ("ошибка подключения", "база данных"),
        "Подключение к серверу настроено.",
    ),
    (
        "Сервер зависал из-за долгих запросов к кэшу.",
        ("сервер зависает", "запрос кэш"),
        "Сервер перезапущен утром.",
    ),
    (
        "Миграции схемы выполняются медленно на большой таблице.",
        ("миграция медленная",),
        "Миграцию откатили.",
    ),
    (
        "Утечку памяти нашли в обработчике очереди.",
        ("утечка памяти", "очередь"),
        "Памяти на сервере хватает.",
    ),
    (
        "Сертификаты истекли, и клиенты получили предупреждения.",
        ("сертификат",),
        "Клиенты получили письмо.",
    ),
    (
        "Резервные копии логов теперь хранятся неделю.",
        ("резервная копия", "логи"),
        "Копию конфигурации сохранили.",
    ),
    (
        "Развертывания на прод замедлились из-за сборки образа.",
        ("развертывание сборка",),
        "Сборку ускорили кэшированием.",
    ),
    (
        "Пароли пользователей теперь хешируются через argon2.",
        ("пароль пользователя",),
        "Пользователи жалуются на интерфейс.",
    ),
    (
        "Таймауты запросов увеличили до тридцати секунд.",
        ("таймаут запроса",),
        "Запросы теперь логируются.",
    ),
)

# (line near the end of a long log, query, the distractor log's line)
LONG_LINES: Final = (
    (
        "FAILED tests/test_invoice_export.py::test_vat_rounding - AssertionError: "
        "assert Decimal('19.99') == Decimal('20.00')",
        "test_vat_rounding",
        "FAILED tests/test_invoice_export.py::test_currency_symbol - AssertionError",
    ),
    (
        "E   psycopg.errors.DeadlockDetected: deadlock detected",
        "DeadlockDetected",
        "E   psycopg.errors.LockNotAvailable: could not obtain lock",
    ),
    (
        "Segmentation fault (core dumped) in libvips",
        "libvips segmentation fault",
        "Aborted (core dumped)",
    ),
    (
        "WARNING: ThreadSanitizer: data race on shard_map",
        "ThreadSanitizer: data race",
        "WARNING: AddressSanitizer: heap-use-after-free",
    ),
    (
        "ERROR tests/test_geo.py::test_haversine_antimeridian - ZeroDivisionError",
        "test_haversine_antimeridian",
        "ERROR tests/test_geo.py::test_bounding_box - ValueError",
    ),
    (
        "npm ERR! 403 Forbidden - PUT @acme/widgets",
        "403 Forbidden",
        "npm ERR! 404 Not Found - GET @acme/gadgets",
    ),
    (
        "fatal error: 'openssl/evp.h' file not found",
        "openssl/evp.h",
        "fatal error: 'zlib.h' file not found",
    ),
    (
        "Killed process 4312 (celery) total-vm:8123456kB, anon-rss:7900000kB",
        "Killed process 4312",
        "Out of memory: Killed process 977 (gunicorn)",
    ),
    (
        "MemoryError: Unable to allocate 7.45 GiB for an array with shape (1000000, 1000)",
        "Unable to allocate 7.45 GiB",
        "MemoryError: Unable to allocate 12.0 MiB for the read buffer",
    ),
    (
        "FAILED tests/e2e/test_checkout.py::test_coupon_stacking_limit - TimeoutError",
        "coupon_stacking_limit",
        "FAILED tests/e2e/test_checkout.py::test_coupon_expired - TimeoutError",
    ),
    (
        "panic: assignment to entry in nil map",
        "assignment to entry in nil map",
        "panic: close of closed channel",
    ),
    (
        'Exception in thread "main" java.lang.StackOverflowError at com.acme.tree.Walker.visit',
        "StackOverflowError",
        'Exception in thread "main" java.lang.IllegalStateException: closed',
    ),
)

# Forks: the parent's (user, assistant) work, then per child (user, assistant, query) and
# the query for the parent's own work (expected: the parent, in the top 5).
FORKS: Final = (
    (
        (
            "Port the CSV importer to the streaming reader.",
            "Ported the CSV importer: it reads 64 KiB chunks through the streaming reader.",
        ),
        (
            (
                "Now add gzip support to the importer.",
                "Added gzip detection by magic bytes; .csv.gz files stream too.",
                "gzip magic bytes",
            ),
            (
                "Add a progress bar to the importer instead.",
                "Added a progress bar that reports rows per second.",
                "progress bar rows per second",
            ),
        ),
        "CSV importer streaming reader",
    ),
    (
        (
            "Set up OpenTelemetry tracing for the checkout service.",
            "Tracing exports spans to the collector over OTLP.",
        ),
        (
            (
                "Sample 10% of traces in production.",
                "Configured a ratio sampler at 0.1 for production.",
                "ratio sampler",
            ),
            (
                "Add span attributes for the cart size.",
                "Added cart.size and cart.currency as span attributes.",
                "cart.size attributes",
            ),
        ),
        "OpenTelemetry tracing checkout",
    ),
    (
        (
            "Write a migration that splits the name column into first and last name.",
            "Migration 0042 splits users.name into given_name and family_name.",
        ),
        (
            (
                "Backfill the new columns in batches of 10k.",
                "The backfill runs in 10k batches with a short sleep between them.",
                "backfill in batches",
            ),
            (
                "Make the migration reversible.",
                "Added a down migration that joins the columns back.",
                "down migration reversible",
            ),
        ),
        "splits the name column",
    ),
    (
        (
            "Investigate why the thumbnail service returns 502s.",
            "The thumbnail service crashes on CMYK JPEGs.",
        ),
        (
            (
                "Convert CMYK to sRGB before resizing.",
                "Added an ICC conversion step with lcms2.",
                "ICC conversion lcms2",
            ),
            (
                "Return a placeholder image on failure.",
                "The handler now serves placeholder.png with a 200 on failure.",
                "placeholder image on failure",
            ),
        ),
        "thumbnail service 502",
    ),
    (
        ("Bump the Go toolchain to 1.23.", "Updated go.mod and the CI image to Go 1.23."),
        (
            (
                "Fix the vet warnings the new toolchain reports.",
                "Fixed the printf vet warnings in internal/log.",
                "printf vet warnings",
            ),
            (
                "Use range-over-func iterators in the store.",
                "Rewrote Store.All as an iterator with range-over-func.",
                "range-over-func iterator",
            ),
        ),
        "Go toolchain 1.23",
    ),
)


# --- specs per category --------------------------------------------------------------------


def _error_specs(rng: random.Random) -> list[Spec]:
    specs = []
    for line, query, other in ERRORS:
        specs.append(
            Spec(
                turns=(("run", _short_log(rng, line)),),
                queries=(query,),
                distractors=((("run", _short_log(rng, other)),),),
            )
        )
    return specs


def _identifier_specs(rng: random.Random) -> list[Spec]:
    kinds = ("code", "assistant", "user")
    specs = []
    for i, (sentence, queries, others) in enumerate(IDENTIFIERS):
        kind = kinds[i % len(kinds)]
        specs.append(
            Spec(
                turns=((kind, _as_code(rng, sentence) if kind == "code" else sentence),),
                queries=queries,
                distractors=tuple((("assistant", other),) for other in others),
            )
        )
    return specs


def _path_specs(rng: random.Random) -> list[Spec]:
    specs = []
    for i, (path, query, other) in enumerate(PATHS):
        turns: tuple[Turn, ...]
        if i % 3 == 0:
            turns = (("read", path),)
        elif i % 3 == 1:
            turns = (("edit", path),)
        else:
            turns = (("assistant", f"The change is in {path}; the rest is untouched."),)
        specs.append(Spec(turns=turns, queries=(query,), distractors=((("read", other),),)))
    return specs


def _question_specs(rng: random.Random) -> list[Spec]:
    specs = []
    for i, (queries, user, reply, d_user, d_reply) in enumerate(QUESTIONS):
        distractors: tuple[tuple[Turn, ...], ...] = ((("user", d_user), ("assistant", d_reply)),)
        if i % 3 == 0:
            # Tool output that holds the question's words scattered among grep hits: the
            # conversational answer must not be drowned by it (it may still rank first).
            distractors += ((("code", _scattered_hits(rng, queries[0])),),)
        specs.append(
            Spec(
                turns=(("user", user), ("assistant", reply)),
                queries=queries,
                distractors=distractors,
            )
        )
    return specs


def _word_form_specs(rng: random.Random) -> list[Spec]:
    return [
        Spec(
            turns=(("assistant" if i % 2 else "user", sentence),),
            queries=(query,),
            distractors=((("user", other),),),
        )
        for i, (sentence, query, other) in enumerate(WORD_FORMS)
    ]


def _cjk_specs(rng: random.Random) -> list[Spec]:
    return [
        Spec(
            turns=(("user", sentence), ("assistant", reply)),
            queries=queries,
            distractors=((("user", other), ("assistant", reply)),),
        )
        for sentence, queries, reply, other in CJK
    ]


def _russian_specs(rng: random.Random) -> list[Spec]:
    reply = "Понял, посмотрю."
    return [
        Spec(
            turns=(("user", sentence), ("assistant", reply)),
            queries=queries,
            distractors=((("user", other), ("assistant", reply)),),
        )
        for sentence, queries, other in RUSSIAN
    ]


def _long_specs(rng: random.Random, config: RelevanceConfig) -> list[Spec]:
    specs = []
    for line, query, other in LONG_LINES:
        size = config.long_kib * 1024 + rng.randrange(-8192, 8192)
        specs.append(
            Spec(
                turns=(("run", _long_log(rng, line, size)),),
                queries=(query,),
                distractors=((("run", _long_log(rng, other, size)),),),
            )
        )
    return specs


# --- generated text around the needles -----------------------------------------------------


def _short_log(rng: random.Random, line: str) -> str:
    """A failing command's output with ``line`` as its last error line."""
    frames = [
        f'  File "/app/{rng.choice(vocab.PACKAGES)}/{rng.choice(vocab.NOUNS)}.py", '
        f"line {rng.randint(1, 900)}, in {vocab.snake(rng)}"
        for _ in range(rng.randint(2, 5))
    ]
    return "\n".join(["Traceback (most recent call last):", *frames, line])


def _as_code(rng: random.Random, sentence: str) -> str:
    """``sentence`` as a grep hit among other hits, the way a tool result shows code."""
    lines = [
        f"src/{rng.choice(vocab.PACKAGES)}/{rng.choice(vocab.NOUNS)}.py:{rng.randint(1, 900)}: "
        f"{vocab.snake(rng)}({vocab.snake(rng)})"
        for _ in range(rng.randint(1, 4))
    ]
    lines.insert(
        rng.randrange(len(lines) + 1), f"src/app/main.py:{rng.randint(1, 900)}: {sentence}"
    )
    return "\n".join(lines)


def _scattered_hits(rng: random.Random, question: str) -> str:
    """About 100 grep hits with the question's content words spread over them."""
    words = [w for w in question.split() if w.lower() not in FUNCTION_WORDS]
    lines = [
        f"src/{rng.choice(vocab.PACKAGES)}/{rng.choice(vocab.NOUNS)}.py:{rng.randint(1, 900)}: "
        f"{vocab.snake(rng)}({vocab.snake(rng)})"
        for _ in range(100)
    ]
    for word in words:
        at = rng.randrange(len(lines))
        lines[at] += f"  # {word}"
    return "\n".join(lines)


def _long_log(rng: random.Random, line: str, size: int) -> str:
    """A pytest log of about ``size`` bytes whose ``line`` sits in the summary at its end:
    far past 64 KiB. Its filler is built from the vocabulary's verbs, nouns and packages."""
    out: list[str] = ["============================= test session starts =============="]
    total = len(out[0])
    while total < size - 1024:
        pkg, noun = rng.choice(vocab.PACKAGES), rng.choice(vocab.NOUNS)
        row = (
            f"tests/{pkg}/test_{noun}.py::test_{vocab.snake(rng)}[{rng.randint(0, 99)}] "
            f"PASSED [{rng.randint(0, 99):3d}%]"
        )
        out.append(row)
        total += len(row) + 1
    out += [
        "=========================== short test summary info ============================",
        line,
        f"==== 1 failed, {len(out)} passed in {rng.randint(100, 900)}.{rng.randint(10, 99)}s ====",
    ]
    return "\n".join(out)


# --- sessions ------------------------------------------------------------------------------


class _Session:
    """Builds one session's events in order (seq from 1), with the contract's shape."""

    def __init__(
        self, sid: str, cwd: str, start_ms: int, rng: random.Random, parent: str | None = None
    ) -> None:
        self.sid = sid
        self.cwd = cwd
        self.rng = rng
        self.clock = start_ms
        self.text = corpus.SessionText(rng, cwd)
        self.events: list[dict[str, Any]] = []
        self.steps = 0
        payload: dict[str, Any] = {"cwd": cwd, "model": rng.choice(("m-large", "m-fast"))}
        if parent is not None:
            payload["parent_session_id"] = parent
        self.add("session/start", "system", payload)

    def add(self, type_: str, surface: str, payload: dict[str, Any]) -> None:
        seq = len(self.events) + 1
        self.events.append(
            {
                "session_id": self.sid,
                "seq": seq,
                "event_id": f"e{self.sid}-{seq:06d}",
                "type": type_,
                "surface": surface,
                "time": corpus.iso_ms(self.clock),
                "payload": payload,
            }
        )
        self.clock += self.rng.randrange(200, 30_000)

    def user(self, text: str) -> None:
        self.steps += 1
        self.add("step/start", "system", {"step": self.steps})
        self.add("message/user", "user", {"text": text})

    def assistant(self, text: str) -> None:
        self.add("message/assistant", "assistant", {"text": text})

    def tool(self, tool: str, arguments: dict[str, Any], output: str, code: int) -> None:
        self.add("tool/call", "assistant", {"tool": tool, "arguments": arguments})
        self.add("tool/result", "tool", {"tool": tool, "output": output, "exit_code": code})

    def filler(self, steps: int) -> None:
        for _ in range(steps):
            self.user(self.text.user_message())
            self.tool(*self.text.tool_exchange())
            self.assistant(self.text.assistant_message())

    def plant(self, turns: Sequence[Turn]) -> None:
        for kind, text in turns:
            if kind == "user":
                self.user(text)
            elif kind == "assistant":
                self.assistant(text)
            elif kind == "run":
                command = f"pytest -q tests -k {vocab.snake(self.rng)}"
                self.tool("bash", {"command": command}, text, 1)
            elif kind == "code":
                self.tool("grep", {"pattern": vocab.snake(self.rng)}, text, 0)
            elif kind == "read":
                self.tool("read_file", {"path": text}, self.text.code(), 0)
            elif kind == "edit":
                old, new = vocab.snake(self.rng), vocab.snake(self.rng)
                self.tool("edit_file", {"path": text, "old": old, "new": new}, f"Edited {text}", 0)
            else:
                raise ValueError(f"unknown turn kind {kind!r}")

    def copy(self, parent: _Session, upto: int) -> None:
        """The parent's events after its session/start, up to position ``upto``, with the
        same payloads (a resumed or forked session's copied history)."""
        for event in parent.events[1:upto]:
            self.add(event["type"], event["surface"], event["payload"])

    def end(self) -> None:
        self.add("session/end", "system", {"reason": "completed"})


# Public name for bench.relevance_scale, which builds its distractor sessions the same way.
Session = _Session


class _Builder:
    """Places sessions in workspaces and collects events and labels."""

    def __init__(self, config: RelevanceConfig, workspaces: tuple[str, ...]) -> None:
        self.config = config
        self.workspaces = workspaces
        self.rng = random.Random(config.seed * 7_919 + 1)
        self.clock = corpus.ORIGIN_MS + 400 * 86_400_000  # after the noise sessions
        self.sessions: list[_Session] = []
        self.labels: list[tuple[str, str, str, str]] = []  # category, query, cwd, sid
        self.near_misses: dict[str, tuple[str, ...]] = {}
        self.reserved: dict[str, tuple[str, ...]] = {}
        self._order = list(range(len(workspaces)))
        self.rng.shuffle(self._order)
        self._placed = 0

    def next_cwd(self) -> str:
        cwd = self.workspaces[self._order[self._placed % len(self._order)]]
        self._placed += 1
        return cwd

    def session(
        self, sid: str, cwd: str, parent: str | None = None, *, titled: bool = True
    ) -> _Session:
        """A new session; a child (``parent`` given) gets its title from the copied events,
        an untitled one (``titled=False``, as imported Claude Code and Codex sessions
        mostly are) has none: the tools show its first prompt."""
        self.clock += 600_000 + self.rng.randrange(300_000)
        rng = random.Random(f"{self.config.seed}:{sid}")
        session = _Session(sid, cwd, self.clock, rng, parent)
        if parent is None and titled:
            session.add("session/title", "system", {"title": session.text.title()})
        self.sessions.append(session)
        return session

    def needle(self, category: str, index: int, spec: Spec) -> None:
        cwd = self.next_cwd()
        sid = f"r{self.config.seed}-{category}-{index:03d}"
        self._filled(sid, cwd, spec.turns)
        for j, turns in enumerate(spec.distractors):
            # Untitled, beside the needle they compete with in one result list.
            self._filled(f"{sid}-d{j}", cwd, turns, titled=False)
        for query in spec.queries:
            self.labels.append((category, query, cwd, sid))
        planted = [text for turns in spec.distractors for _, text in turns]
        self.near_misses[sid] = (*planted, *spec.variants)
        if spec.reserved:
            self.reserved[sid] = spec.reserved

    def _filled(self, sid: str, cwd: str, turns: Sequence[Turn], *, titled: bool = True) -> None:
        session = self.session(sid, cwd, titled=titled)
        session.filler(session.rng.randint(0, 1))
        session.plant(turns)
        session.filler(session.rng.randint(1, 2))
        session.end()

    def fork_family(self, index: int, family: tuple[Any, ...]) -> None:
        (user, reply), children, parent_query = family
        cwd = self.next_cwd()
        sid = f"r{self.config.seed}-fork-{index:03d}"
        parent = self.session(sid, cwd)
        parent.filler(1)
        parent.plant((("user", user), ("assistant", reply)))
        shared = len(parent.events)  # a fork copies up to here; a resume copies everything
        parent.filler(2)
        parent.end()
        for j, (c_user, c_reply, query) in enumerate(children):
            child = self.session(f"{sid}-c{j}", cwd, parent=sid)
            child.copy(parent, len(parent.events) - 1 if j == 0 else shared)
            child.plant((("user", c_user), ("assistant", c_reply)))
            child.filler(1)
            child.end()
            self.labels.append(("fork", query, cwd, child.sid))
        self.labels.append(("fork", parent_query, cwd, sid))

    def conversations(self, limit: int | None) -> list[str]:
        """The conversational-memory workspaces (``limit`` of them at most), their
        sessions and labels; returns their cwds."""
        cwds = []
        for i, (a, b) in enumerate(rconv.PEOPLE[:limit]):
            cwd = f"/home/{a.lower()}/chats/{b.lower()}"

            def new_session(sid: str, start_ms: int, cwd: str = cwd) -> _Session:
                session = _Session(sid, cwd, start_ms, random.Random(f"{self.config.seed}:{sid}"))
                self.sessions.append(session)
                return session

            for label in rconv.build(self.config.seed, i, cwd, new_session):
                self.labels.append((label.category, label.query, cwd, label.session_id))
            cwds.append(cwd)
        return cwds


def _paraphrase_specs(rng: random.Random) -> list[Spec]:
    from bench.relevance_paraphrase import PARAPHRASES

    return [
        Spec(
            turns=(("user", user), ("assistant", reply)),
            queries=queries,
            distractors=((("user", d_user), ("assistant", d_reply)),),
        )
        for user, reply, queries, d_user, d_reply in PARAPHRASES
    ]


def _specs(category: str, rng: random.Random, config: RelevanceConfig) -> list[Spec]:
    if category == "long_output":
        return _long_specs(rng, config)
    from bench import relevance_probes as probes

    makers = {
        "error_fragment": _error_specs,
        "identifier_part": _identifier_specs,
        "path": _path_specs,
        "natural_language": _question_specs,
        "word_form": _word_form_specs,
        "cjk": _cjk_specs,
        "non_english": _russian_specs,
        "paraphrase": _paraphrase_specs,
        "pasted_error": probes.pasted_error_specs,
        "focused": probes.focused_specs,
        "rare_word": probes.rare_word_specs,
    }
    return makers[category](rng)


def noise_config(config: RelevanceConfig) -> corpus.CorpusConfig:
    return corpus.CorpusConfig(
        sessions=max(1, config.workspaces * config.noise_sessions),
        events=config.noise_events,
        workspaces=config.workspaces,
        seed=config.seed,
    )


def build(config: RelevanceConfig) -> RelevanceCorpus:
    """The whole labelled corpus, events in stream order (callers, noise, needles)."""
    noise = noise_config(config)
    workspaces = corpus.workspace_paths(noise)
    callers = {cwd: f"caller{config.seed}-{i}" for i, cwd in enumerate(workspaces)}
    events = [_caller_start(sid, cwd) for cwd, sid in callers.items()]
    if config.noise_sessions:
        events.extend(corpus.generate(noise))
    builder = _Builder(config, workspaces)
    limit = config.per_category
    for category in CATEGORIES:
        if category in rconv.CATEGORIES or config.conversations_only:
            continue
        if category == "fork":
            for i, family in enumerate(FORKS[:limit]):
                builder.fork_family(i, family)
            continue
        rng = random.Random(f"{config.seed}:{category}")
        for i, spec in enumerate(_specs(category, rng, config)[:limit]):
            builder.needle(category, i, spec)
    for cwd in builder.conversations(limit):
        callers[cwd] = f"caller{config.seed}-{len(callers)}"
        events.append(_caller_start(callers[cwd], cwd))
    for session in builder.sessions:
        events.extend(session.events)
    queries = tuple(
        LabelledQuery(category, query, cwd, sid, callers[cwd])
        for category, query, cwd, sid in builder.labels
    )
    return RelevanceCorpus(
        config, workspaces, callers, events, queries, builder.near_misses, builder.reserved
    )


def _caller_start(sid: str, cwd: str) -> dict[str, Any]:
    # The caller's session holds nothing but its start: it is only where queries come from.
    return {
        "session_id": sid,
        "seq": 1,
        "event_id": f"e{sid}-000001",
        "type": "session/start",
        "surface": "system",
        "time": corpus.iso_ms(corpus.ORIGIN_MS),
        "payload": {"cwd": cwd},
    }


def session_texts(events: Sequence[dict[str, Any]]) -> Iterator[tuple[str, str, list[Any]]]:
    """(session id, cwd, payloads in seq order) per session, for checks over the corpus."""
    cwd: dict[str, str] = {}
    payloads: dict[str, list[Any]] = {}
    for event in events:
        sid = event["session_id"]
        if event["type"] == "session/start":
            cwd[sid] = event["payload"]["cwd"]
        payloads.setdefault(sid, []).append(event["payload"])
    for sid, items in payloads.items():
        yield sid, cwd[sid], items
