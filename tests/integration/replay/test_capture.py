"""The capture path round trip on moto: events through Kinesis Data Firehose to S3, then replayed from the
``s3://`` prefix and from a local folder of ``.gz`` objects, giving what the same events in a JSONL file give.

moto's Firehose writes each PutRecordBatch call as one object, the records' bytes joined as they are
(``<prefix>YYYY/MM/DD/HH/<stream>-1-YYYY-MM-DD-HH-MM-SS-<uuid>``); it applies neither the stream's
processors nor its compression. So the records are put twice: once as EventBridge sends them (one
event, no newline: what a stream without ``AppendDelimiterToRecord`` stores, objects back to back on
one line), once with the newline that processor appends. The gzip objects Firehose writes with
``CompressionFormat: GZIP`` are made here from moto's objects, named as Firehose names them (``.gz``).
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import boto3
import pytest

from governor_client.__main__ import main
from governor_client.replay import load_policy, replay_events, replay_file
from governor_client.replay.capture import records
from governor_client.replay.model import ReplayResult
from governor_client.simulator.scenarios import seed_tuning_request
from tests.integration.replay.conftest import capture, write_jsonl

# One worker runs this module: its module-scoped (or cached) runs are built once, not once per worker.
pytestmark = pytest.mark.xdist_group("replay-capture")

P3_2X = "ml.p3.2xlarge"
BUCKET = "tuning-governor-capture-123456789012"
STREAM = "tuning-governor-capture"
PREFIX = "events/"
OBJECTS = 3  # PutRecordBatch calls (each at most 500 records), one object each


@pytest.fixture(scope="module")
def events() -> list[dict[str, Any]]:
    """Two teams sharing an ml.p3.2xlarge quota of 8: the enforce policy below stops one of them."""
    return capture(
        [
            (0, seed_tuning_request("team-a-hpo", team="vision", instance_type=P3_2X, max_parallel=4, max_jobs=4)),
            (
                60,
                seed_tuning_request(
                    "team-b-hpo", team="speech", instance_type=P3_2X, instance_count=2, max_parallel=3, max_jobs=3
                ),
            ),
        ]
    ).events


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("capture-policy") / "policy.yaml"
    path.write_text(f"mode: enforce\nquotas:\n  {P3_2X}: 8\n")
    return path


@pytest.fixture(scope="module")
def from_jsonl(
    events: list[dict[str, Any]], policy_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> ReplayResult:
    path = write_jsonl(tmp_path_factory.mktemp("capture-jsonl") / "events.jsonl", events)
    return replay_file(path, load_policy(policy_file), policy_source="policy.yaml")


@pytest.fixture
def firehose_bucket(mocked_aws: None) -> Any:
    """An S3 bucket and a DirectPut delivery stream writing to it under ``events/``, as template.yaml deploys."""
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    boto3.client("firehose").create_delivery_stream(
        DeliveryStreamName=STREAM,
        DeliveryStreamType="DirectPut",
        ExtendedS3DestinationConfiguration={
            "RoleARN": "arn:aws:iam::123456789012:role/capture-delivery",
            "BucketARN": f"arn:aws:s3:::{BUCKET}",
            "Prefix": PREFIX,
            "ErrorOutputPrefix": "errors/",
            "CompressionFormat": "GZIP",
            "ProcessingConfiguration": {"Enabled": True, "Processors": [{"Type": "AppendDelimiterToRecord"}]},
        },
    )
    return s3


def put_through_firehose(events: list[dict[str, Any]], *, newline: bool) -> int:
    """PutRecordBatch the events as EventBridge's target would (the whole event, JSON); objects written."""
    firehose = boto3.client("firehose")
    size = -(-len(events) // OBJECTS)
    assert size <= 500
    batches = [events[i : i + size] for i in range(0, len(events), size)]
    for number, batch in enumerate(batches):
        if number:
            time.sleep(1.05)  # moto names objects by the second: one second apart keeps key order = put order
        data = [json.dumps(event).encode() + (b"\n" if newline else b"") for event in batch]
        response = firehose.put_record_batch(DeliveryStreamName=STREAM, Records=[{"Data": d} for d in data])
        assert response["FailedPutCount"] == 0
    return len(batches)


def object_keys(s3: Any, prefix: str) -> list[str]:
    return sorted(item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", []))


def gzip_copies(s3: Any, folder: Path | None, prefix: str | None) -> int:
    """Each captured object gzipped and named ``<key>.gz``, into ``folder`` and/or under ``prefix`` in S3."""
    keys = object_keys(s3, PREFIX)
    for key in keys:
        body = gzip.compress(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
        relative = key.removeprefix(PREFIX) + ".gz"
        if folder is not None:
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_bytes(body)
        if prefix is not None:
            s3.put_object(Bucket=BUCKET, Key=prefix + relative, Body=body)
    return len(keys)


@pytest.mark.parametrize("newline", [True, False], ids=["with-delimiter", "records-back-to-back"])
def test_a_firehose_capture_replays_from_s3_like_the_jsonl_file(
    firehose_bucket: Any, events: list[dict[str, Any]], policy_file: Path, from_jsonl: ReplayResult, newline: bool
) -> None:
    # Given the history delivered through Firehose to S3, in more than one object
    assert put_through_firehose(events, newline=newline) == OBJECTS
    assert len(object_keys(firehose_bucket, PREFIX)) >= 2

    # When it is replayed from the s3:// prefix
    replayed = replay_events(f"s3://{BUCKET}/{PREFIX}", load_policy(policy_file), policy_source="policy.yaml")

    # Then every event is processed and the result is the JSONL file's, stops included
    assert replayed.events.processed == len(events)
    assert replayed.events.rejected == 0
    assert from_jsonl.actions, "the policy must stop something for the comparison to mean much"
    assert replayed.model_dump() == from_jsonl.model_dump()


def test_gzip_objects_replay_from_a_local_folder_and_from_s3_like_the_jsonl_file(
    firehose_bucket: Any, events: list[dict[str, Any]], policy_file: Path, from_jsonl: ReplayResult, tmp_path: Path
) -> None:
    # Given the capture as Firehose writes it with GZIP compression, downloaded to a folder and in S3
    put_through_firehose(events, newline=True)
    folder = tmp_path / "capture"
    assert gzip_copies(firehose_bucket, folder, "gzipped/") >= 2
    (folder / ".DS_Store").write_bytes(b"\x00\x01")  # a hidden file a desktop left behind is skipped

    # When both are replayed
    policy = load_policy(policy_file)
    from_folder = replay_events(folder, policy, policy_source="policy.yaml")
    from_s3 = replay_events(f"s3://{BUCKET}/gzipped/", policy, policy_source="policy.yaml")

    # Then both give the JSONL file's result
    assert from_folder.events.processed == len(events)
    assert from_folder.model_dump() == from_jsonl.model_dump()
    assert from_s3.model_dump() == from_jsonl.model_dump()


def test_the_command_replays_an_s3_prefix_and_a_folder(
    firehose_bucket: Any,
    events: list[dict[str, Any]],
    policy_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    put_through_firehose(events, newline=True)
    folder = tmp_path / "capture"
    gzip_copies(firehose_bucket, folder, None)
    jsonl = write_jsonl(tmp_path / "events.jsonl", events)

    outputs = {}
    for name, source in {"s3": f"s3://{BUCKET}/{PREFIX}", "folder": str(folder), "jsonl": str(jsonl)}.items():
        out = tmp_path / f"{name}.json"
        assert main(["replay", source, "--policy", str(policy_file), "--out", str(out)]) == 0
        assert f"Replay of {source} under" in capsys.readouterr().out
        result = json.loads(out.read_text())
        outputs[name] = result

    assert outputs["s3"] == outputs["folder"] == outputs["jsonl"]
    assert outputs["s3"]["events"]["processed"] == len(events)


@pytest.mark.parametrize(
    ("source", "message", "code"),
    [
        (f"s3://{BUCKET}/nothing-here/", f"no objects under s3://{BUCKET}/nothing-here/", 2),
        # a bucket that does not exist is AWS's answer, not the input's shape: docs/reference/cli.md's exit 3
        ("s3://no-such-bucket-123456789012/events/", "NoSuchBucket", 3),
        ("s3:///events/", "names no bucket", 2),
        ("{empty folder}", "no capture files in folder", 2),
    ],
    ids=["empty-prefix", "missing-bucket", "no-bucket-name", "empty-folder"],
)
@pytest.mark.usefixtures("firehose_bucket")
def test_an_unusable_capture_exits_with_one_line(
    policy_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, message: str, code: int
) -> None:
    status = main(["replay", source.replace("{empty folder}", str(tmp_path)), "--policy", str(policy_file)])

    err = capsys.readouterr().err
    assert status == code
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_records_split_objects_written_back_to_back_and_leave_other_lines_to_the_replay() -> None:
    data = b'{"a": 1}{"b": {"c": "}{"}}\n\n  {"d": 4}  \nnot json {"e": 5}\n{"f": 6}{"g"\n'

    assert list(records(data)) == [
        b'{"a": 1}',
        b'{"b": {"c": "}{"}}',
        b'{"d": 4}',
        b'not json {"e": 5}',
        b'{"f": 6}{"g"',
    ]
