"""The floor lines of the redo chart: the redo read at the sequential rate fio measured, what no
recovery that reads its redo from the disk beats. One per host's disk, and one per storage class
its runs read through (fio in the class's cap, runner/throttle.py)."""

from recovery_lab_cli.units import MIB

# A floor's key for a storage class's runs (pages/context.py disk_floors): "HOST as storage class NAME"
AS_CLASS = " as storage class "


def floor_lines(floors: dict[str, float] | None, hosts: set[str], top: float) -> list[dict]:
    """A dashed line from 0 to `top` MiB for each floor of a host among `hosts`."""
    traces = []
    for reader, rate in sorted((floors or {}).items()):  # "host" or "host as storage class X"
        host, _, storage = reader.partition(AS_CLASS)
        if host not in hosts or not rate or not top:
            continue
        what = f"{host} as storage class {storage}" if storage else f"{host}'s disk"
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"{what} reading the redo sequentially ({rate:,.0f} MB/s, fio): the floor",
                "x": [0, top],
                "y": [0, top * MIB / (rate * 1e6)],
                "line": {"color": "#e6550d", "dash": "dash", "width": 1.5},
                "hovertemplate": "%{x:.0f} MiB read in %{y:.3f} s at its sequential rate<extra></extra>",
            }
        )
    return traces
