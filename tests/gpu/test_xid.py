"""The XID table: NVIDIA's meanings and immediate actions looked up from the labels GPU alerts carry.

The expected rows are written from the cited sources (NVIDIA's XID Errors page as dcgm-exporter quotes it,
and the Xid Catalog's "Resolution Bucket (Immediate Action)" column), not read back from the data file.
"""

from __future__ import annotations

import pytest

from alertrouter.gpu import xid
from alertrouter.message import i18n

EN = i18n.translations("en")
ZH = i18n.translations("zh-CN")


@pytest.mark.parametrize(
    ("code", "meaning", "bucket", "action"),
    [
        (13, "Graphics Engine Exception", "RESTART_APP", "restart_app"),
        (31, "GPU memory page fault", "RESTART_APP", "restart_app"),
        (43, "GPU stopped processing", "IGNORE", "none"),
        (48, "Double Bit ECC Error", "WORKFLOW_XID_48", "memory_dbe"),
        (63, "ECC page retirement or row remapping recording event", "IGNORE", "none"),
        (64, "ECC page retirement or row remapper recording failure", "RESET_GPU", "reset_gpu"),
        (74, "NVLINK Error", "WORKFLOW_NVLINK_ERR", "nvlink"),
        (79, "GPU has fallen off the bus", "RESTART_BM", "reboot_node"),
        (94, "Contained ECC error", "RESTART_APP", "restart_app"),
        (95, "Uncontained ECC error", "RESET_GPU", "reset_gpu"),
        (119, "GSP RPC Timeout", "RESET_GPU", "reset_gpu"),
        (120, "GSP Error", "RESET_GPU", "reset_gpu"),
        (54, "Auxiliary power is not connected to the GPU board", "CHECK_MECHANICALS", "check_hardware"),
        (1, "Invalid or corrupted push buffer stream", "UNEXPECTED_ERR_REPORT_ISSUE", "contact_support"),
        (151, "Robust Channel Key rotation Error", "RESTART_VM", "reboot_node"),
    ],
)
def test_known_codes_carry_nvidias_meaning_and_action(code: int, meaning: str, bucket: str, action: str) -> None:
    info = xid.lookup(code)
    assert (info.known, info.meaning, info.bucket, info.action) == (True, meaning, bucket, action)
    assert info.meaning_zh
    assert info.meaning_zh != info.meaning


def test_a_code_newer_than_the_catalog_copy_has_a_meaning_but_sends_to_the_docs() -> None:
    info = xid.lookup(172)
    assert (info.known, info.meaning, info.action) == (True, "Uncorrectable SRAM Error", "see_docs")
    assert xid.action_text(EN, info.action) == "see NVIDIA's XID documentation"


@pytest.mark.parametrize("code", [0, 999, 4242])
def test_unknown_codes_are_unknown(code: int) -> None:
    info = xid.lookup(code)
    assert not info.known
    assert xid.xid_line(EN, "en", info) == f"XID {code}: unknown XID: see NVIDIA docs"
    assert xid.xid_line(ZH, "zh-CN", info) == f"XID {code}：未知 XID，请查阅 NVIDIA 文档"


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("79", 79),
        ("79.0", 79),  # `{{ $value }}` without printf
        (" 48 ", 48),
        (79, 79),
        (48.0, 48),
        ("0", None),  # dcgm-exporter: no XID since the last reset
        ("-1", None),
        ("79.5", None),
        ("abc", None),
        ("", None),
        ("NaN", None),
        ("inf", None),
        ("1e30", None),
        ("9" * 400, None),
        (None, None),
        (True, None),
        (["79"], None),
    ],
)
def test_label_values_parse_without_ever_raising(value: object, code: int | None) -> None:
    assert xid.parse_code(value) == code


def test_the_xid_label_wins_over_err_code() -> None:
    # dcgm-exporter 4.x puts err_code/err_msg on DCGM_FI_DEV_XID_ERRORS; the shipped rule adds `xid`
    labels = {"alertname": "GPUXidError", "xid": "94", "err_code": "94", "err_msg": "Contained ECC error"}
    assert xid.from_labels(labels) == xid.lookup(94)
    assert xid.from_labels({"xid": "garbage", "err_code": "79"}) == xid.lookup(79)
    assert xid.from_labels({"err_code": "63", "err_msg": "ECC page retirement"}) == xid.lookup(63)
    assert xid.from_labels({"alertname": "GPUHighTemp", "gpu": "3"}) is None
    assert xid.from_labels({"err_code": "0", "err_msg": "No Error"}) is None


def test_lines_in_both_languages() -> None:
    info = xid.lookup(79)
    assert xid.xid_line(EN, "en", info) == "XID 79: GPU has fallen off the bus — action: reboot the node"
    assert xid.xid_line(EN, "en", info, "1, 3") == (
        "XID 79 on GPU 1, 3: GPU has fallen off the bus — action: reboot the node"
    )
    assert xid.xid_line(ZH, "zh-CN", info) == "XID 79：GPU 已从总线掉线 — 处理：重启节点"
    assert xid.xid_line(ZH, "zh-CN", xid.lookup(95), "2") == "XID 95（GPU 2）：未隔离的 ECC 错误 — 处理：重置 GPU"


def test_every_action_class_is_worded_in_both_languages() -> None:
    for action in {*xid.ACTIONS.values(), "see_docs"}:
        english, chinese = xid.action_text(EN, action), xid.action_text(ZH, action)
        assert chinese
        assert english != chinese


def test_every_bucket_in_the_table_is_a_known_one() -> None:
    buckets = {info.bucket for info in xid.table().values()}
    assert buckets - {""} <= set(xid.ACTIONS)
    assert len(xid.table()) >= 170


# What a person on call can do: each catalogued action names at least one of these.
_DEEDS_EN = ("restart", "reset", "reboot", "contact", "check", "update", "act on", "no action", "RMA")
_DEEDS_ZH = ("重启", "重置", "联系", "检查", "升级", "处理", "无需处理", "RMA")


def test_every_catalogued_action_says_what_to_do_in_both_languages() -> None:
    """Never "follow NVIDIA's workflow" alone: a workflow is said as its first steps."""
    for info in xid.table().values():
        if not info.bucket:
            continue  # newer than the catalog copy: the documentation
        english, chinese = xid.action_text(EN, info.action), xid.action_text(ZH, info.action)
        assert "workflow" not in english.lower(), info.code
        assert "流程" not in chinese, info.code
        assert any(deed in english for deed in _DEEDS_EN), (info.code, english)
        assert any(deed in chinese for deed in _DEEDS_ZH), (info.code, chinese)


@pytest.mark.parametrize(
    ("code", "english", "chinese"),
    [
        (48, "reset the GPU to remap its memory; RMA if the remap fails (XID 64) or it repeats",
         "重置 GPU 以重映射显存；若重映射失败（XID 64）或反复出现则申请 RMA 返修"),
        (45, "act on the XID reported before it; alone, restart the application",
         "按在它之前报告的 XID 处理；单独出现时重启应用"),
        (74, "reset the GPU; if NVLink errors repeat, check the NVLink links and contact NVIDIA support",
         "重置 GPU；NVLink 错误反复出现时检查 NVLink 连接并联系 NVIDIA 支持"),
        (144, "reset the GPU; if NVLink errors repeat, check the NVLink links and contact NVIDIA support",
         "重置 GPU；NVLink 错误反复出现时检查 NVLink 连接并联系 NVIDIA 支持"),
        (154, "do the recovery the driver names: reset the GPU or reboot the node",
         "执行驱动指明的恢复操作：重置 GPU 或重启节点"),
        (79, "reboot the node", "重启节点"),
        (94, "restart the application", "重启应用"),
        (95, "reset the GPU", "重置 GPU"),
        (119, "reset the GPU", "重置 GPU"),
        (120, "reset the GPU", "重置 GPU"),
    ],
)  # fmt: skip
def test_the_actions_of_the_faults_on_call_meets(code: int, english: str, chinese: str) -> None:
    info = xid.lookup(code)
    assert xid.action_text(EN, info.action) == english
    assert xid.action_text(ZH, info.action) == chinese
    assert xid.short_line(ZH, info) == f"XID {code}：{chinese}"


def test_the_catalog_link_is_nvidias() -> None:
    assert xid.CATALOG_URL == "https://docs.nvidia.com/deploy/xid-errors/"
