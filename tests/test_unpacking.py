"""A .tar.gz made elsewhere (an experiment's export, a host's bundle) is read within bounds: a
gzip bomb is refused at the bound, a cut or corrupt stream says so, never a 500 or a traceback."""

import gzip
import io
import json
import tarfile

import pytest

from experiments.ingest.unpacking import BoundedTar, Limits, UnpackRefused
from workers.ssh import unpack_bundle
from workers.transports import TransportError

LIMITS = Limits(unpacked_bytes=16 << 20, members=50)


def tar_gz(files: dict[str, bytes], claimed_sizes: dict[str, int] | None = None) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    archive = out.getvalue()
    if claimed_sizes:  # a header that claims more than follows it
        raw = bytearray(gzip.decompress(archive))
        for name, size in claimed_sizes.items():
            info = tarfile.TarInfo(name)
            info.size = size
            header = info.tobuf(format=tarfile.GNU_FORMAT)
            at = raw.find(name.encode())
            raw[at : at + 512] = header[:512]
        archive = gzip.compress(bytes(raw))
    return archive


class CountingReader(io.BytesIO):
    """The compressed bytes the reader took: how far into a bomb it went."""

    taken = 0

    def read(self, size=-1):
        data = super().read(size)
        self.taken += len(data)
        return data


def test_a_gzip_bomb_is_refused_at_the_bound_without_unpacking_the_rest():
    bomb = tar_gz({"result.json": b"{}", "zeros": bytes(256 << 20)})  # 256 MiB in ~250 KiB
    assert len(bomb) < 1 << 20
    source = CountingReader(bomb)
    with pytest.raises(UnpackRefused, match="add up to more than 16,777,216 bytes"):
        BoundedTar(source, LIMITS)
    assert source.taken < len(bomb) / 4  # the headers said so: the zeros were never unpacked


def test_a_header_claiming_more_than_the_bound_is_refused_before_its_data_is_read():
    archive = tar_gz({"result.json": b"{}", "huge": b"x" * 1000}, claimed_sizes={"huge": 100 << 30})
    with pytest.raises(UnpackRefused, match="add up to more than"):
        BoundedTar(io.BytesIO(archive), LIMITS)


def test_too_many_members_are_refused():
    archive = tar_gz({f"f{n}": b"" for n in range(51)})
    with pytest.raises(UnpackRefused, match="more than 50 files"):
        BoundedTar(io.BytesIO(archive), LIMITS)


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.95])
def test_a_stream_cut_anywhere_gets_a_reason(keep):
    archive = tar_gz({"result.json": b"{}", "error.log": bytes(range(256)) * 4000})
    cut = archive[: int(len(archive) * keep)]
    with pytest.raises(UnpackRefused) as refused:
        with BoundedTar(io.BytesIO(cut), LIMITS) as tar:
            tar.read("error.log", 1 << 30)
    assert "cut short" in str(refused.value) or "not a .tar.gz archive" in str(refused.value)


def test_corrupt_compressed_bytes_get_a_reason():
    archive = bytearray(tar_gz({"result.json": b"{}", "error.log": bytes(range(256)) * 4000}))
    archive[len(archive) // 2 : len(archive) // 2 + 64] = b"\xff" * 64
    with pytest.raises(UnpackRefused, match="not a .tar.gz archive|cannot be read"):
        with BoundedTar(io.BytesIO(bytes(archive)), LIMITS) as tar:
            tar.read("error.log", 1 << 30)


def test_a_bundle_within_bounds_is_read_whole(settings):
    result = {"contract_version": 1, "status": "done"}
    archive = tar_gz({"./result.json": json.dumps(result).encode(), "./error.log": b"line\n" * 10})
    bundle = unpack_bundle(archive)
    assert bundle.result == result and bundle.files["error.log"] == b"line\n" * 10


def test_a_bomb_from_a_host_is_a_permanent_failure_of_the_run(settings):
    settings.BUNDLE_MAX_UNPACKED_BYTES = 1 << 20
    archive = tar_gz({"./result.json": b"{}", "./error.log": bytes(64 << 20)})
    with pytest.raises(
        TransportError, match="the bundle the host sent back is refused: .*more than 1,048,576"
    ) as e:
        unpack_bundle(archive)
    assert e.value.permanent


def test_a_bundle_cut_in_transfer_is_a_permanent_failure_of_the_run():
    archive = tar_gz({"./result.json": b"{}", "./error.log": bytes(range(256)) * 4000})
    with pytest.raises(TransportError, match="refused: .*(cut short|not a .tar.gz archive)") as e:
        unpack_bundle(archive[: len(archive) // 2])
    assert e.value.permanent
