"""The copies the dataset cache and the crash images make (runner/dataset.py): every byte the same,
space allocated and never written left unwritten. A 12 GiB redo log made at its full size held
8 GiB of redo when seed 000's crash was kept; its copies had written the other 4 GiB as zeros."""

import os

from runner.dataset import keep_copy

MIB = 2**20


def test_a_copy_reads_the_same_and_leaves_what_was_never_written_unwritten(tmp_path):
    datadir = tmp_path / "data"
    (datadir / "sub").mkdir(parents=True)
    log = datadir / "ib_logfile0"
    with log.open("wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, 64 * MIB)  # made at its size, as a server makes its log
        handle.write(os.urandom(MIB))  # redo written at its start ...
        handle.seek(40 * MIB)
        handle.write(os.urandom(MIB))  # ... and at another place
    sparse = datadir / "sub" / "sparse"
    with sparse.open("wb") as handle:
        handle.seek(10 * MIB)
        handle.write(b"end")  # a hole, then three bytes
    (datadir / "empty").write_bytes(b"")

    manifest = keep_copy(datadir, tmp_path / "copy")

    for name in ("ib_logfile0", "sub/sparse", "empty"):
        original, copy = datadir / name, tmp_path / "copy" / name
        assert copy.read_bytes() == original.read_bytes(), name
        assert manifest[name][2] == original.stat().st_size
    # the log's two written MiB, not its 64 (st_blocks: 512-byte units actually allocated)
    assert (tmp_path / "copy" / "ib_logfile0").stat().st_blocks * 512 <= 4 * MIB
    assert (tmp_path / "copy" / "sub" / "sparse").stat().st_blocks * 512 <= MIB
