"""`memorybot import FILE --url ...` against a deployed-style API on loopback: a stage in the
URL, the admin secret from MEMORYBOT_ADMIN_SECRET, API Gateway's throttle answering 429 now and
then, and the real admin handler (fakes behind) answering the rest."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fakes import FakeMemoryStore, FakePeopleStore, FakeRunStore, owner
from memorybot import bootstrap, cli
from memorybot.adapters.invoker import LocalContext
from memorybot.bootstrap import Container
from memorybot.config import Settings
from memorybot.handlers import admin

SECRET = "deployed-admin-secret"
ALICE = "111111111111111111"
GUILD = "guild:900000000000000001"


class Gateway:
    """API Gateway in front of the admin function: REST (v1) proxy events, the stage in the path,
    and a 429 for every ``throttle_every``-th request, as its method throttle would."""

    def __init__(self, throttle_every: int = 0) -> None:
        self.requests: list[dict] = []
        self.throttle_every = throttle_every
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                gateway.requests.append(json.loads(body))
                if gateway.throttle_every and len(gateway.requests) % gateway.throttle_every == 1:
                    status, answer = 429, json.dumps({"message": "Too Many Requests"})
                else:
                    stage, _, resource = self.path.partition("/memory/")
                    event = {
                        "resource": f"/memory/{resource}",
                        "path": f"/memory/{resource}",
                        "requestContext": {"path": self.path, "stage": stage.strip("/")},
                        "httpMethod": "POST",
                        "headers": dict(self.headers),
                        "body": body,
                        "isBase64Encoded": False,
                    }
                    response = admin.handler(event, LocalContext("memorybot-admin"))
                    status, answer = response["statusCode"], response["body"]
                raw = answer.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/prod"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def deployed(monkeypatch):
    memories = FakeMemoryStore()
    settings = Settings.from_env({"MEMORYBOT_ADMIN_SECRET": SECRET})
    container = Container(settings, memory_store=memories, run_store=FakeRunStore(), people_store=FakePeopleStore())
    monkeypatch.setattr(bootstrap, "container", lambda: container)
    monkeypatch.setenv("MEMORYBOT_ADMIN_SECRET", SECRET)
    monkeypatch.setattr(cli, "IMPORT_BACKOFF_SECONDS", 0.001)
    gateway = Gateway(throttle_every=3)
    yield gateway, memories
    gateway.close()


def rows(n: int, **overrides) -> list[dict]:
    return [
        {"userId": ALICE, "scope": GUILD, "text": f"Fact {i}", "createdAt": "2026-01-01T00:00:00Z", "id": f"s{i}"}
        | overrides
        for i in range(n)
    ]


def test_a_file_bigger_than_a_request_is_checked_whole_then_imported_in_batches_through_the_throttle(
    deployed, tmp_path, capsys
):
    gateway, memories = deployed
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"memories": rows(250), "dryRun": True}))  # the file's dryRun is not the command's
    assert cli.main(["import", str(path), "--url", gateway.url]) == 0
    assert f"Imported 250 memories into the stack at {gateway.url}." in capsys.readouterr().out
    assert len(memories.of(owner(ALICE, GUILD))) == 250
    sent = [(len(r["memories"]), r["dryRun"]) for r in gateway.requests]
    # three dry-run batches (one refused by the throttle and sent again), then the three for real
    assert [s for s in sent if s[1]][:3] and {n for n, _ in sent} == {100, 50}
    assert sum(n for n, dry in sent if not dry) > 250  # the throttled ones were sent again
    assert cli.main(["import", str(path), "--url", gateway.url]) == 0
    assert f"Imported 0 memories into the stack at {gateway.url}, 250 unchanged (imported before)." in (
        capsys.readouterr().out
    )


def test_a_scope_the_deployment_does_not_use_in_the_last_batch_means_nothing_is_written(deployed, tmp_path, capsys):
    gateway, memories = deployed
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"memories": rows(230) + rows(1, scope="global", id="g")}))
    assert cli.main(["import", str(path), "--url", gateway.url]) == 1
    error = capsys.readouterr().err
    assert "memories[230].scope" in error and "nothing was imported" in error  # the file's own index
    assert memories.rows == {} and memories.ledger == []
    assert all(r["dryRun"] for r in gateway.requests)


def test_dry_run_counts_and_sends_nothing_for_real(deployed, tmp_path, capsys):
    gateway, memories = deployed
    path = tmp_path / "rows.json"
    without_ids = [{k: v for k, v in r.items() if k != "id"} for r in rows(3)]
    path.write_text(json.dumps({"memories": without_ids + without_ids}))  # identical rows: imported once
    assert cli.main(["import", str(path), "--url", gateway.url, "--dry-run"]) == 0
    said = capsys.readouterr().out
    assert f"Dry run against the stack at {gateway.url}: 3 would be imported, 3 unchanged" in said
    assert memories.rows == {} and all(r["dryRun"] for r in gateway.requests)


def test_a_repeated_id_anywhere_in_the_file_is_refused_naming_both_rows_before_anything_is_sent(
    deployed, tmp_path, capsys
):
    gateway, memories = deployed
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"memories": rows(150) + rows(1, text="Another fact", id="s7")}))
    assert cli.main(["import", str(path), "--url", gateway.url]) == 2
    error = capsys.readouterr().err
    assert "memories[150].id" in error and "memories[7]" in error and "nothing was imported" in error
    assert gateway.requests == [] and memories.rows == {}


def test_a_wrong_secret_is_said_so_and_a_file_that_is_not_json_is_refused_before_sending(
    deployed, tmp_path, capsys, monkeypatch
):
    gateway, memories = deployed
    gateway.throttle_every = 0
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"memories": rows(1)}))
    monkeypatch.setenv("MEMORYBOT_ADMIN_SECRET", "not-the-secret")
    assert cli.main(["import", str(path), "--url", gateway.url]) == 1
    assert "HTTP 401" in capsys.readouterr().err
    path.write_text("{not json")
    sent = len(gateway.requests)
    assert cli.main(["import", str(path), "--url", gateway.url]) == 2
    assert "not a readable JSON file" in capsys.readouterr().err and len(gateway.requests) == sent
    assert memories.rows == {}
