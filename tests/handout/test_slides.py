"""The workshop's slides work with no network: `scripts/build_slides.py` builds an opening deck and
one deck per agenda block; each opened from disk in headless Chromium with every non-local request
blocked starts reveal.js, renders every slide with content, and no request fails."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from courseware import workshop

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("build_slides", ROOT / "scripts" / "build_slides.py")
slides = importlib.util.module_from_spec(spec)
spec.loader.exec_module(slides)

sync_api = pytest.importorskip("playwright.sync_api", reason="make handout-test installs playwright")


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    return out, slides.build(out)


def test_a_deck_for_every_block_but_the_breaks(decks):
    out, result = decks
    blocks = [b for b in workshop.agenda() if b.kind != "break"]
    assert len(result["decks"]) == len(blocks)
    assert (out / "index.html").exists()
    for rel in slides.REVEAL_FILES:
        assert (out / "reveal.js" / rel).exists(), rel
    for html_file in out.glob("[0-9][0-9]-*.html"):
        text = html_file.read_text(encoding="utf-8")
        assert "unpkg.com" not in text and "cdn" not in text.lower(), html_file.name
        assert 'src="reveal.js/dist/reveal.js"' in text


def test_every_slide_renders_from_disk_with_the_network_blocked(decks, browser):
    out, result = decks
    problems = []
    for stem in result["decks"] + ["index"]:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        failed = []

        def route(r, failed=failed):
            if r.request.url.startswith("file:"):
                r.continue_()
            else:
                failed.append(f"blocked {r.request.url}")
                r.abort()

        page.route("**/*", route)
        page.on("requestfailed", lambda r, failed=failed: failed.append(f"failed {r.url}"))
        page.on("console", lambda m, failed=failed: failed.append(f"console {m.text}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e, failed=failed: failed.append(f"error {e}"))
        page.goto((out / f"{stem}.html").as_uri())
        if stem == "index":
            links = page.evaluate("() => Array.from(document.querySelectorAll('a'), a => a.href)")
            assert len(links) == len(result["decks"])
            problems += [f"index: {f}" for f in failed]
            page.close()
            continue
        page.wait_for_function("document.body.dataset.reveal === 'ready'", timeout=30_000)
        indices = page.evaluate("""() => Reveal.getSlides().map(s => Reveal.getIndices(s))""")
        total = page.evaluate("Reveal.getTotalSlides()")
        if total < 2:
            problems.append(f"{stem}: only {total} slide(s)")
        for index in indices:
            page.evaluate(f"Reveal.slide({index['h']}, {index.get('v') or 0})")
            shown = page.evaluate("""() => { const s = Reveal.getCurrentSlide();
                const r = s.getBoundingClientRect();
                return {text: s.innerText.trim().length, w: r.width, h: r.height,
                        visible: getComputedStyle(s).display !== 'none'}; }""")
            if not (shown["text"] > 0 and shown["w"] > 0 and shown["h"] > 0 and shown["visible"]):
                problems.append(f"{stem}: slide {index} is empty or hidden ({shown})")
        problems += [f"{stem}: {f}" for f in failed]
        page.close()
    assert not problems, "\n".join(problems)
