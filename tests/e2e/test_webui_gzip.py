"""Large UI replies are gzipped for clients that accept it; event streams never are (they must
reach the page event by event)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx

from tests.inprocess_master import TOKEN, inprocess_master, served
from trialkit.config import parse_config
from trialkit.store import NewMetric


def test_a_large_chart_reply_is_gzipped_and_the_event_stream_is_not(tmp_path: Path) -> None:
    with inprocess_master(tmp_path) as api, served(api.app) as url:
        config = parse_config(
            {
                "searcher": {"name": "random", "metric": "loss", "max_trials": 3},
                "entrypoint": "python3 train.py",
            }
        )  # a full config, as create stores it
        exp = api.store.create_experiment(name="big", config=config.as_dict()).id
        for i in range(3):
            t = api.store.create_trial(
                experiment_id=exp, request_id=uuid.uuid4().hex, hparams={}, seed=i
            )
            api.store.add_metrics(
                [NewMetric(t.id, "validation", s, {"loss": i + 1 / s}) for s in range(1, 3001)]
            )
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=url, headers=auth, trust_env=False, timeout=60) as http:
            path = f"/api/v1/experiments/{exp}/metrics"
            plain = http.get(path, headers={"Accept-Encoding": "identity"})
            zipped = http.get(path, headers={"Accept-Encoding": "gzip"})
            assert "content-encoding" not in plain.headers
            assert len(plain.content) > 64 * 1024
            assert zipped.headers["content-encoding"] == "gzip"
            assert int(zipped.headers["content-length"]) < len(plain.content) / 2
            assert zipped.json() == plain.json()
            assert [len(s["steps"]) for s in plain.json()["series"]] == [3000, 3000, 3000]
            events = f"/api/v1/experiments/{exp}/events"
            with http.stream("GET", events, headers={"Accept-Encoding": "gzip"}) as resp:
                assert resp.headers["content-type"].startswith("text/event-stream")
                assert "content-encoding" not in resp.headers
                lines = resp.iter_lines()
                line = next(lines)
                while not line.startswith("data: "):
                    line = next(lines)
                assert json.loads(line[len("data: ") :])["experiment_id"] == exp
