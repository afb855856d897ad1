"""The Kubernetes example: manifests the API server would accept, for the image we build.

Each document is validated strictly (unknown fields refused) against Kubernetes' own
OpenAPI schemas, shipped offline by ``kubernetes-validate``; then what the schema cannot
say is checked: the pods run as the Dockerfile's user, every setting is one ticketproxy
reads, the probes are the routes that exist, and the Ingress outlasts the longest wait.
No cluster runs here, so the manifests are not applied.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from proxy.cli.variables import ReadNames, unknown_variables
from proxy.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = ROOT / "deploy" / "kubernetes" / "ticketproxy.yaml"
# The oldest Kubernetes release still supported upstream when the example was written.
KUBERNETES = "1.33.0"
# What `kubectl create secret generic ticketproxy` puts in the pods' environment.
SECRET = {
    "TICKETPROXY_GITHUB_TOKEN": "ghp_example",
    "TICKETPROXY_API_KEYS": "client-key-0123456789",
    "TICKETPROXY_DATABASE_URL": "postgresql://ticketproxy:pw@db.internal:5432/ticketproxy",
    "TICKETPROXY_WEBHOOK_SECRET": "webhook-secret-0123456789",
}


def documents() -> dict[str, dict[str, Any]]:
    """Return the example's documents by kind."""
    return {doc["kind"]: doc for doc in yaml.safe_load_all(MANIFESTS.read_text())}


def container() -> dict[str, Any]:
    """Return the ticketproxy container of the Deployment."""
    spec = documents()["Deployment"]["spec"]["template"]["spec"]
    (only,) = spec["containers"]
    return dict(only)


def environment() -> dict[str, str]:
    """Return the container's environment: its literal values and the Secret's keys."""
    env = {item["name"]: item["value"] for item in container()["env"]}
    assert container()["envFrom"] == [{"secretRef": {"name": "ticketproxy"}}]
    return env | SECRET


@pytest.mark.parametrize("kind", ["Deployment", "Service", "PodDisruptionBudget", "Ingress"])
def test_each_manifest_is_valid_for_the_kubernetes_api(kind: str) -> None:
    """The document validates strictly against Kubernetes' schema for its kind."""
    kubernetes_validate.validate(documents()[kind], KUBERNETES, strict=True)


def test_a_misspelt_field_in_a_manifest_is_refused() -> None:
    """Strict validation refuses a field Kubernetes does not know, so the check can fail."""
    deployment = documents()["Deployment"]
    deployment["spec"]["replica"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES, strict=True)


def test_two_replicas_on_different_nodes_never_both_disrupted() -> None:
    """Two pods, spread over nodes, updated one at a time, at least one always kept."""
    docs = documents()
    spec = docs["Deployment"]["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    (spread,) = spec["template"]["spec"]["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname"
    assert spread["whenUnsatisfiable"] == "DoNotSchedule"
    assert docs["PodDisruptionBudget"]["spec"]["minAvailable"] == 1


def test_the_pods_run_as_the_images_unprivileged_user() -> None:
    """runAsUser is the uid the Dockerfile creates; no root, no privilege, no capabilities."""
    uid = re.search(r"useradd [^\n]*--uid (\d+)", (ROOT / "Dockerfile").read_text())
    assert uid is not None
    pod = documents()["Deployment"]["spec"]["template"]["spec"]["securityContext"]
    assert pod["runAsNonRoot"] is True
    assert pod["runAsUser"] == int(uid[1])
    own = container()["securityContext"]
    assert own["allowPrivilegeEscalation"] is False
    assert own["readOnlyRootFilesystem"] is True
    assert own["capabilities"]["drop"] == ["ALL"]


def test_every_setting_is_one_ticketproxy_reads_and_they_load() -> None:
    """The environment loads as settings, with no variable ticketproxy would not read."""
    read = ReadNames(environment())
    settings = Settings.from_env(read).with_listen("0.0.0.0", 8080)
    settings.check_exposure()
    assert unknown_variables(environment(), read.names) == []
    assert settings.database_url == SECRET["TICKETPROXY_DATABASE_URL"]
    assert settings.redis_url is None


def test_the_allowed_hosts_name_the_ingress_host_and_the_service() -> None:
    """Requests through the Ingress and from inside the cluster pass the Host check."""
    allowed = environment()["TICKETPROXY_ALLOWED_HOSTS"].split(",")
    (rule,) = documents()["Ingress"]["spec"]["rules"]
    assert rule["host"] in allowed
    assert documents()["Service"]["metadata"]["name"] in allowed


def test_the_probes_are_the_health_routes_the_server_answers() -> None:
    """Liveness is /healthz and readiness /readyz, on the container's named port."""
    own = container()
    assert own["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert own["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert {"name": "http", "containerPort": 8080} in own["ports"]
    routes = (ROOT / "proxy" / "app.py").read_text()
    assert 'add_get("/healthz"' in routes
    assert 'add_get("/readyz"' in routes


def test_the_ingress_neither_buffers_nor_times_out_the_longest_wait() -> None:
    """ingress-nginx streams unbuffered and reads longer than TICKETPROXY_MAX_WAIT."""
    notes = documents()["Ingress"]["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    assert notes[prefix + "proxy-buffering"] == "off"
    longest = int(environment()["TICKETPROXY_MAX_WAIT"])
    assert int(notes[prefix + "proxy-read-timeout"]) > longest
    assert int(notes[prefix + "proxy-send-timeout"]) > longest
    assert "non_idempotent" in notes[prefix + "proxy-next-upstream"]
