"""Write the HTML page ``dvc plots show`` fills (``.dvc/config``: ``plots.html_template``), with the chart
library inside it, so that the page draws offline.

DVC's own page loads vega, vega-lite and vega-embed from a CDN, and stays blank without the network. This page
carries them as one script, bundled by the ``vl-convert-python`` package (a dev dependency, pinned in
pyproject.toml so that the page is reproducible: ``tests/test_plots_page.py`` rebuilds it and compares).

    python scripts/plots_page.py [--out .dvc/plots/offline.html] [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / ".dvc" / "plots" / "offline.html"
VEGA_LITE = "5.21"  # DVC's templates declare Vega-Lite v5

TEMPLATE = """<!DOCTYPE html>
<html>
<head>
    {refresh_tag}
    <meta charset="utf-8">
    <title>spanft: DVC plots (offline: vega {vega}, vega-lite {vega_lite}, vega-embed {embed} inside)</title>
    <script type="text/javascript">
(function () {{
{bundle}
}})();
    </script>
    <style>
        table {{
            border-spacing: 15px;
        }}
    </style>
</head>
<body>
    {plot_divs}
</body>
</html>
"""


def page_text() -> str:
    """The page: DVC's placeholders ``{refresh_tag}`` and ``{plot_divs}``, and no ``{scripts}`` (the CDN's)."""
    import vl_convert

    bundle = vl_convert.javascript_bundle(vl_version=VEGA_LITE)
    for forbidden in ("</script", "{plot_divs}", "{scripts}", "{refresh_tag}"):
        if forbidden in bundle:
            raise SystemExit(f"plots_page: the bundle holds {forbidden!r}: it cannot be inlined as it is")
    versions = {"vega": vl_convert.get_vega_version(), "vega_lite": VEGA_LITE,
                "embed": vl_convert.get_vega_embed_version()}
    return TEMPLATE.format(bundle=bundle, refresh_tag="{refresh_tag}", plot_divs="{plot_divs}", **versions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PAGE)
    parser.add_argument("--check", action="store_true", help="only say whether OUT is up to date (exit 1 if not)")
    args = parser.parse_args(argv)
    text = page_text()
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'up to date' if same else 'stale: run python scripts/plots_page.py'}")
        return 0 if same else 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"{args.out}: {len(text):,} characters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
