"""A node's evidence as a small signed bundle, and the bundles of a job's nodes as one scan.

Consumes, on a node, the folder of that node's logs and dumps, the names it goes by (tenant,
cluster, job, node) and the tenant's secret; produces a gzip file of kilobytes to megabytes
where the logs are gigabytes: the node's scan as plain data (`denpex.distributed.fanout`:
signature matches with their lines and context, abnormal lines, progress lines, dump summaries,
digests, warnings), signed with the tenant's secret. On the service, consumes bundles and the
tenants; produces the `ScanResult` the single pass gives for the nodes' folders side by side,
named by node (`denpex diagnose NODE_A NODE_B ...` where each is a folder of that node's logs):
nodes in name order, each node's files in reading order.

Timestamps that print no year take the year of an earlier input, which may be on another node.
A node cannot know it, so for such an input the bundle also carries its scan in the years it
may be: the year the node's own logs state and the clock's. The service takes the one the
single pass would read; if neither is, the diagnosis says so.
"""

from __future__ import annotations

import gzip
import io
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from denpex.auth import Tenant, bundle_signed_by, sign_bundle
from denpex.distributed.codec import CodecError, Signatures, decode_input, encode_input
from denpex.distributed.fanout import (
    Assembled,
    Plan,
    PlanItem,
    ScanSettings,
    assemble_units,
    check_results,
    local_rescan,
    plan_inputs,
    ref_json,
    scan_units,
)
from denpex.errors import InputError
from denpex.evidence import year_of
from denpex.ingest.sources import FileRef, StreamRef

KIND = "denpex-evidence-bundle"
FORMAT = 1
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
"""What a tenant, cluster, job or node name may be (they name rows, paths and links)."""


class BundleError(InputError):
    """A bundle that is damaged, too large, unsigned, or of another library."""


@dataclass(frozen=True)
class BundleName:
    tenant: str
    cluster: str
    job: str
    node: str

    def __post_init__(self) -> None:
        for field_name in ("tenant", "cluster", "job", "node"):
            value = getattr(self, field_name)
            if not isinstance(value, str) or not NAME.fullmatch(value):
                raise BundleError(
                    f"the {field_name} name {value!r} is not 1 to 128 letters, digits and ._:@-"
                )


@dataclass(frozen=True)
class Bundle:
    name: BundleName
    plan: Plan
    scan: dict[str, Any]
    created: str


# --- on the node ------------------------------------------------------------------------------


def make_bundle(folder: str, name: BundleName, secret: str, settings: ScanSettings) -> bytes:
    """The signed bundle of the logs and dumps in `folder`, named as node `name.node`."""
    plan = plan_inputs([folder], shown_as=[name.node])
    if any(isinstance(item.ref, StreamRef) for item in plan.items):
        raise BundleError(f"{folder}: a bundle is made of a folder or a file, not a stream")
    refs = [ref_json(item.ref) for item in plan.items]
    scan = scan_units(refs, settings.as_json())
    _add_years(plan, scan, settings)
    created = datetime.now(UTC).isoformat(timespec="seconds")
    return _sealed(name, created, _plan_json(plan), scan, secret)


def resealed(bundle: Bundle, secret: str, change: Callable[[Any], Any]) -> bytes:
    """`bundle` made again with its plan and scan (plain JSON data) passed through `change`,
    signed anew with the tenant's `secret`: what the service keeps of a bundle it has checked
    (`change` redacts its secrets)."""
    plan, scan = change([_plan_json(bundle.plan), bundle.scan])
    return _sealed(bundle.name, bundle.created, plan, scan, secret)


def _plan_json(plan: Plan) -> dict[str, Any]:
    return {
        "items": [
            {
                "shown": item.ref.shown,
                "relative": item.ref.relative,
                "warnings": list(item.warnings_before),
            }
            for item in plan.items
            if isinstance(item.ref, FileRef)
        ],
        "trailing": list(plan.trailing),
    }


def _sealed(
    name: BundleName, created: str, plan: dict[str, Any], scan: dict[str, Any], secret: str
) -> bytes:
    payload = {
        "kind": KIND,
        "format": FORMAT,
        "tenant": name.tenant,
        "cluster": name.cluster,
        "job": name.job,
        "node": name.node,
        "created": created,
        "plan": plan,
        "scan": scan,
    }
    text = json.dumps(payload, separators=(",", ":")).encode()
    signed = {"payload": text.decode(), "signature": sign_bundle(secret, name.tenant, text)}
    return gzip.compress(json.dumps(signed, separators=(",", ":")).encode())


def _add_years(plan: Plan, scan: dict[str, Any], settings: ScanSettings) -> None:
    """Beside each input read in a year it does not state, its scan in the other years the
    single pass may read it in: the node's own year and the clock's."""
    rescan = local_rescan(settings)
    signatures = settings.signatures()
    decoded = [
        [decode_input(value, signatures) for value in unit["inputs"]] for unit in scan["units"]
    ]
    own_year = next(
        (
            year
            for unit in decoded
            for s in unit
            if s.year_stated and (year := year_of(s)) is not None
        ),
        None,
    )
    years = {y for y in (own_year, datetime.now(UTC).year) if y is not None}
    for item, unit, inputs in zip(plan.items, scan["units"], decoded, strict=True):
        for member, scanned in enumerate(inputs):
            if scanned.year_stated or scanned.default_year is None:
                continue
            unit["inputs"][member]["by_year"] = {
                str(year): encode_input(rescan(item.ref, member, year))
                for year in sorted(years - {scanned.default_year})
            }


# --- on the service ---------------------------------------------------------------------------


def open_bundle(data: bytes, tenants: Mapping[str, Tenant], *, max_bytes: int) -> Bundle:
    """The bundle in `data`, checked: it unpacks within `max_bytes`, is of this format and is
    signed by the tenant it names. Raises BundleError."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as unpacked:
            text = unpacked.read(max_bytes + 1)
    except (OSError, EOFError) as error:
        raise BundleError(f"not a gzip-compressed bundle ({error})") from None
    if len(text) > max_bytes:
        raise BundleError(f"the bundle unpacks to more than {max_bytes} bytes")
    try:
        signed = json.loads(text)
        payload_text = signed["payload"].encode()
        signature = signed["signature"]
        payload = json.loads(payload_text)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise BundleError("not a denpex evidence bundle (its JSON does not parse)") from None
    if not isinstance(payload, dict) or payload.get("kind") != KIND:
        raise BundleError("not a denpex evidence bundle")
    if payload.get("format") != FORMAT:
        raise BundleError(
            f"a bundle of format {payload.get('format')!r}; this service reads {FORMAT}"
        )
    tenant_id = str(payload.get("tenant", ""))
    if not isinstance(signature, str) or not bundle_signed_by(
        tenants.get(tenant_id), tenant_id, payload_text, signature
    ):
        raise BundleError("the bundle is not signed by the tenant it names")
    try:
        name = BundleName(tenant_id, payload["cluster"], payload["job"], payload["node"])
        plan = Plan(
            tuple(
                PlanItem(FileRef("", i["shown"], i["relative"]), tuple(i["warnings"]))
                for i in payload["plan"]["items"]
            ),
            tuple(payload["plan"]["trailing"]),
        )
        scan = payload["scan"]
        if len(scan["units"]) != len(plan.items):
            raise BundleError("the bundle's scan does not match its list of files")
        return Bundle(name, plan, scan, str(payload.get("created", "")))
    except (KeyError, TypeError) as error:
        raise BundleError(f"a bundle with a damaged plan ({error})") from None


def assemble_bundles(
    bundles: list[Bundle], signatures: Signatures, *, max_unpacked_bytes: int
) -> Assembled:
    """The single pass's scan of the nodes' folders, side by side in node order."""
    if not bundles:
        raise InputError("nothing to diagnose: no bundle has arrived for this job")
    ordered = sorted(bundles, key=lambda b: b.name.node)
    nodes = [b.name.node for b in ordered]
    if len(set(nodes)) != len(nodes):
        raise BundleError("two bundles name the same node")
    check_results([b.scan for b in ordered], signatures)
    items: list[PlanItem] = []
    units: dict[int, Any] = {}
    trailing: list[str] = []
    for bundle in ordered:
        first = len(items)
        carried = list(bundle.plan.items)
        if carried and trailing:  # what the walk said after a node's last file comes next
            carried[0] = PlanItem(carried[0].ref, (*trailing, *carried[0].warnings_before))
            trailing = []
        items.extend(carried)
        units.update({first + n: unit for n, unit in enumerate(bundle.scan["units"])})
        trailing.extend(bundle.plan.trailing)
    try:
        return assemble_units(
            Plan(tuple(items), tuple(trailing)),
            units,
            signatures,
            max_unpacked_bytes=max_unpacked_bytes,
            unpacked_bytes=sum(b.scan["unpacked_bytes"] for b in ordered),
        )
    except CodecError as error:
        raise BundleError(str(error)) from None
