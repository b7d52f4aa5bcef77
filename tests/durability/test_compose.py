"""docker-compose.temporal.yml cannot run here (no Docker engine); check
that it is well formed, pinned and wired as the README says."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_compose_file_is_pinned_and_complete() -> None:
    doc = yaml.safe_load((REPO / "docker-compose.temporal.yml").read_text())
    services = doc["services"]
    assert {"postgresql", "temporal-schema", "temporal", "temporal-namespace", "temporal-ui", "temporal-admin-tools"} <= set(services)
    for name, svc in services.items():
        image = svc["image"]
        tag = image.rpartition(":")[2]
        assert ":" in image and tag not in ("", "latest"), f"{name}: image {image!r} is not pinned"
    # server and admin tools move together
    server_version = services["temporal"]["image"].rpartition(":")[2]
    assert services["temporal-schema"]["image"].rpartition(":")[2].startswith(server_version + "-")
    assert services["temporal"]["environment"]["DB"] == "postgres12"
    assert "7233:7233" in services["temporal"]["ports"]
    assert services["temporal"]["depends_on"]["temporal-schema"]["condition"] == "service_completed_successfully"
    # the files it mounts exist
    for svc in services.values():
        for volume in svc.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (REPO / source).exists(), source
    dynamic = yaml.safe_load((REPO / "deploy/dynamicconfig.yaml").read_text())
    assert dynamic["history.transferProcessorMaxPollRPS"][0]["value"] == 1000
