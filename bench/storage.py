"""Benchmark: checkpoint storage throughput (issue 19 figures).

1. S3: upload + download of a checkpoint of 8 files (1 GB in all) to a moto S3 server on
   loopback, trialkit's ObjectStoreManager beside boto3's transfer manager (s3transfer, all 8
   files submitted at once) on the same files. trialkit also computes each file's sha256 (the
   manifest) on upload and checks it on download; boto3 does not. Goal: >= 0.9x boto3.
2. shared_fs: SharedFSStorageManager.upload of the same 1 GB into a storage directory beside
   ``cp -r`` of the directory on the same disk. trialkit also computes each file's crc32 (the
   manifest) in the same pass, by zlib-ng with the fast-crc extra, else by zlib (the line
   printed names which); cp copies in the kernel and reads nothing. Goal: >= 0.9x cp.

Rounds alternate between the two sides; the page cache is not dropped (same for both).
Printed: median seconds, MB/s and the ratio (trialkit / baseline throughput).
Usage: ``python bench/storage.py [--mb 1024] [--files 8] [--rounds 2] [--only s3|shared_fs]``; needs moto[server],
boto3 and s3fs (the storage tox env). Everything written is deleted at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from trialkit.storage import ObjectStoreManager, SharedFSStorageManager, build
from trialkit.storage._manifest import CRC32_IMPLEMENTATION

KEY, SECRET = "bench", "bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_moto(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    raise SystemExit(f"moto server did not start (log {log})")


def make_files(root: Path, total_mb: int, n: int) -> list[str]:
    root.mkdir(parents=True)
    names = [f"shard-{i}.bin" for i in range(n)]
    block = os.urandom(2**20)
    for name in names:
        with open(root / name, "wb") as f:
            for i in range(total_mb // n):
                f.write(block[i % 251 :] + block[: i % 251])  # distinct blocks, cheap to make
    return names


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def s3_rounds(url: str, src: Path, names: list[str], work: Path, rounds: int) -> None:
    import boto3
    from s3transfer.manager import TransferManager

    client = boto3.client(
        "s3",
        endpoint_url=url,
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
        region_name="us-east-1",
    )
    client.create_bucket(Bucket="bench")
    manager = build(
        {
            "type": "s3",
            "bucket": "bench",
            "endpoint_url": url,
            "access_key": KEY,
            "secret_key": SECRET,
        }
    )
    assert isinstance(manager, ObjectStoreManager)
    manager.check_access()  # opens its connection pool, as creating the boto3 client above did

    def ours() -> float:
        sid = str(uuid.uuid4())
        dst = work / f"ours-{sid}"
        seconds = timed(lambda: manager.upload(src, sid, names))
        seconds += timed(lambda: manager.download(sid, dst))
        manager.delete(sid)
        shutil.rmtree(dst)
        return seconds

    def boto() -> float:
        prefix = str(uuid.uuid4())
        dst = work / f"boto-{prefix}"
        dst.mkdir()

        def up() -> None:
            with TransferManager(client) as tm:
                futures = [tm.upload(str(src / n), "bench", f"{prefix}/{n}") for n in names]
                for f in futures:
                    f.result()

        def down() -> None:
            with TransferManager(client) as tm:
                futures = [tm.download("bench", f"{prefix}/{n}", str(dst / n)) for n in names]
                for f in futures:
                    f.result()

        seconds = timed(up) + timed(down)
        for n in names:
            client.delete_object(Bucket="bench", Key=f"{prefix}/{n}")
        shutil.rmtree(dst)
        return seconds

    report("S3 upload+download", src, rounds, ours, boto, "boto3 transfer manager")


def shared_fs_rounds(src: Path, names: list[str], work: Path, rounds: int) -> None:
    base = work / "shared_fs"
    manager = SharedFSStorageManager(base)

    def ours() -> float:
        sid = str(uuid.uuid4())
        seconds = timed(lambda: manager.upload(src, sid, names))
        manager.delete(sid)
        return seconds

    def cp() -> float:
        dst = work / f"cp-{uuid.uuid4()}"
        seconds = timed(lambda: subprocess.run(["cp", "-r", str(src), str(dst)], check=True))
        shutil.rmtree(dst)
        return seconds

    report(f"shared_fs save (crc32 by {CRC32_IMPLEMENTATION})", src, rounds, ours, cp, "cp -r")


def report(
    what: str,
    src: Path,
    rounds: int,
    ours: Callable[[], float],
    base: Callable[[], float],
    base_name: str,
) -> None:
    mb = sum(p.stat().st_size for p in src.iterdir()) / 2**20
    a: list[float] = []
    b: list[float] = []
    for _ in range(rounds):
        a.append(ours())
        b.append(base())
    ta, tb = statistics.median(a), statistics.median(b)
    print(
        f"{what}, {mb:.0f} MB: trialkit {ta:.2f}s ({mb / ta:.0f} MB/s), {base_name} {tb:.2f}s "
        f"({mb / tb:.0f} MB/s); trialkit/{base_name} throughput {tb / ta:.2f}x "
        f"(rounds: trialkit {[round(x, 2) for x in a]}, {base_name} {[round(x, 2) for x in b]})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", choices=["s3", "shared_fs"], default=None)
    args = parser.parse_args()
    tmp = Path(tempfile.gettempdir())
    free_mb = shutil.disk_usage(tmp).free // 2**20
    need = args.mb * 5  # source, downloads of both sides, moto's spill files
    print(f"{tmp}: {free_mb} MB free; this run needs about {need} MB; load {os.getloadavg()}")
    if free_mb < need:
        raise SystemExit(f"not enough space in {tmp}")
    work = Path(tempfile.mkdtemp(prefix="tk-bench-storage-"))
    proc = None
    try:
        src = work / "src"
        names = make_files(src, args.mb, args.files)
        if args.only != "s3":
            shared_fs_rounds(src, names, work, max(5, args.rounds))  # ~1 s each: more rounds
        if args.only != "shared_fs":
            proc, url = start_moto(work / "moto.log")
            s3_rounds(url, src, names, work, args.rounds)
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
