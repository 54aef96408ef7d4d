"""A screenshot of a DingTalk message as the on-call group sees it on a phone, for the docs.

    .venv/bin/python tests/bench/message_screenshot.py --language zh-CN --out docs/assets/dingtalk-firing-zh-CN.png

Renders the built-in sample notification (`alertrouter render dingtalk/firing.md --sample`) with the shipped
templates in --language and --timezone, turns its markdown into HTML the way DingTalk's client shows a
robot's markdown card (headings, bold, lists, quotes, links in blue, `<font color>`; the subset DingTalk
documents), puts it in a chat bubble under the robot's name, and captures it with Debian's Chromium through
Playwright at 390 px wide, twice the density. Chinese is drawn with the system's CJK font (fonts-noto-cjk).
"""

from __future__ import annotations

import argparse
import html
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from playwright.sync_api import sync_playwright

from alertrouter.message.i18n import LANGUAGES, Locale
from alertrouter.render.samples import sample_notifications
from alertrouter.render.templates import Templates

ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]  # fmt: skip
_FONT = re.compile(r"&lt;font color=&quot;(#[0-9A-Fa-f]{3,6}|[a-z]+)&quot;&gt;(.*?)&lt;/font&gt;")
_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_CODE = re.compile(r"`([^`]+)`")
_ESCAPED = re.compile(r"\\([\\`*_~|&#+=.\-)])")
# The severity emoji of the templates (render.context), drawn as the phone's emoji font would: this machine
# has no colour emoji font, and a missing glyph would show as a box.
_EMOJI = {"🔴": "#e53935", "🟠": "#fb8c00", "🔵": "#1e88e5", "⚪": "#bdbdbd", "✅": "#43a047"}


def inline(text: str) -> str:
    """One line of DingTalk markdown as HTML: escaped first, then the markup DingTalk renders."""
    out = html.escape(text, quote=True)
    out = _FONT.sub(r'<span style="color:\1">\2</span>', out)
    out = _CODE.sub(r"<code>\1</code>", out)
    out = _LINK.sub(r'<a href="\2">\1</a>', out)
    out = _BOLD.sub(r"<b>\1</b>", out)
    out = _ESCAPED.sub(r"\1", out)
    for emoji, color in _EMOJI.items():
        mark = "✓" if emoji == "✅" else ""
        out = out.replace(emoji, f'<span class="emoji" style="background:{color}">{mark}</span>')
    return re.sub(r"(^|\s)(@\d{6,}|@[A-Za-z][\w.-]*)", r'\1<span class="at">\2</span>', out)


def markdown_html(markdown: str) -> str:
    """The block structure DingTalk shows: `#` headings, `- ` lists, `> ` quotes, paragraphs."""
    blocks: list[str] = []
    items: list[str] = []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("- "):
            items.append(f"<li>{inline(line[2:])}</li>")
            continue
        if items:
            blocks.append("<ul>" + "".join(items) + "</ul>")
            items = []
        heading = re.match(r"^(#{1,6})\s+(.*)$", line)
        if heading:
            level = len(heading.group(1))
            blocks.append(f"<h{level}>{inline(heading.group(2))}</h{level}>")
        elif line.startswith("> "):
            blocks.append(f"<blockquote>{inline(line[2:])}</blockquote>")
        elif line.strip():
            blocks.append(f"<p>{inline(line)}</p>")
    return "\n".join(blocks)


PAGE = """<!DOCTYPE html>
<html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title>
<style>
  body {{ margin: 0; background: #f2f3f5; font: 15px/1.55 "PingFang SC", "Noto Sans CJK SC", sans-serif;
         color: #171a1d; }}
  .bar {{ background: #fff; padding: 12px 16px; font-weight: 600; text-align: center;
          border-bottom: 1px solid #e5e6eb; }}
  .row {{ display: flex; gap: 8px; padding: 14px 10px; }}
  .avatar {{ width: 38px; height: 38px; border-radius: 8px; background: #3296fa; color: #fff; flex: none;
            display: flex; align-items: center; justify-content: center; font-weight: 700; }}
  .name {{ font-size: 12px; color: #8f959e; margin: 0 0 4px 2px; }}
  .card {{ background: #fff; border-radius: 10px; padding: 10px 14px; width: 290px; overflow-wrap: anywhere; }}
  h1, h2, h3 {{ font-size: 16px; margin: 4px 0 8px; }}
  ul {{ padding-left: 18px; margin: 6px 0; }} li {{ margin: 2px 0; }}
  p {{ margin: 6px 0; }} a {{ color: #3296fa; text-decoration: none; }} .at {{ color: #3296fa; }}
  .emoji {{ display: inline-block; width: 1em; height: 1em; border-radius: 50%; vertical-align: -0.12em;
            color: #fff; font-size: 0.8em; line-height: 1.25em; text-align: center; }}
  blockquote {{ margin: 6px 0; padding-left: 8px; border-left: 3px solid #dee0e3; color: #646a73; }}
  code {{ font-family: "Noto Sans Mono CJK SC", monospace; background: #f2f3f5; padding: 0 3px; border-radius: 3px; }}
</style></head>
<body><div class="bar">{group}</div>
<div class="row"><div class="avatar">AR</div><div><div class="name">{robot}</div>
<div class="card">{card}</div></div></div></body></html>
"""


def page(language: str, timezone: str, kind: str) -> str:
    templates = Templates(language=language, timezone=timezone)
    n = replace(sample_notifications()[kind], locale=Locale(language, timezone))
    zh = language == "zh-CN"
    return PAGE.format(
        lang=language,
        title=html.escape(templates.title(n)),
        group="GPU 集群值班群" if zh else "GPU cluster on-call",
        robot="alertrouter 告警机器人" if zh else "alertrouter robot",
        card=markdown_html(templates.render("dingtalk", "md", n)),
    )


def shoot(source: Path, out: Path, chromium: str) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        context = browser.new_context(viewport={"width": 390, "height": 600}, device_scale_factor=2)
        tab = context.new_page()
        tab.goto(source.as_uri())
        tab.screenshot(path=str(out), full_page=True)
        browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--language", choices=LANGUAGES, default="zh-CN")
    parser.add_argument("--timezone", default="Asia/Shanghai")
    parser.add_argument("--kind", choices=sorted(sample_notifications()), default="firing")
    parser.add_argument("--out", type=Path, help="PNG (default docs/assets/dingtalk-KIND-LANGUAGE.png)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    out = args.out or Path("docs") / "assets" / f"dingtalk-{args.kind}-{args.language}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="alertrouter-message-") as tmp:
        source = Path(tmp) / "message.html"
        source.write_text(page(args.language, args.timezone, args.kind), encoding="utf-8")
        shoot(source, out, args.chromium)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
