"""End to end in a real browser: `make e2e` runs this once it has built the docs.

1. JupyterLab from this venv opens every notebook in headless Chromium, clears it, runs
   all cells from the Run menu, and checks that each code cell ran once, in order, with
   no error and nothing on stderr.
2. Each translated notebook (notebooks/LANG/) opens in JupyterLab with its translated title
   and all its cells (they run the English code, which step 1 ran).
3. The built site (build/docs, and build/docs/LANG per language) shows every figure a notebook
   has stored, on its page, typesets its formulas, and links every page to itself in the other
   languages; the API reference documents functions and classes.

Screenshots go to build/e2e/. The last line is "e2e: N passed, N failed".
Not a pytest file on purpose: `make test` stays fast and needs no browser.
"""

import json
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
LANGUAGES = ("pt_BR", "zh_CN")  # each has notebooks/LANG/ and a site in build/docs/LANG
SITE = ROOT / "build" / "docs"
SHOTS = ROOT / "build" / "e2e"
CHROMIUM = "/usr/bin/chromium"  # Debian's package; Playwright never downloads a browser here
CHROMIUM_ARGS = [
    "--no-sandbox",  # the sandbox refuses to start as root (CI)
    "--disable-gpu",
    # No calls home: on a closed network they only add refused connections and delays.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Only the local server and the local site are loaded; anything else (the Colab badge
# image) is refused at once, so a run is the same with or without network.
EXTERNAL = re.compile(r"^https?://(?!127\.0\.0\.1[:/])")
RUN_TIMEOUT_S = 600  # per notebook; 07 trains small models
# Notebooks run two at a time: a kernel spends much of its time starting and importing,
# and the machines that run this have two cores or more.
AT_ONCE = 2

# JupyterLab user settings for the run: every cell in the DOM (the default windowing
# attaches off-screen cells lazily, and we count cells), no autosave, no news fetching.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}

# Evaluated in the page: the state of every code cell of the open notebook.
CELLS_JS = """() => {
    const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
    return [...panel.querySelectorAll('.jp-CodeCell')].map(cell => ({
        prompt: cell.querySelector('.jp-InputPrompt').textContent.trim(),
        stderr: [...cell.querySelectorAll(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
            .map(o => o.textContent.slice(0, 2000)),
        figures: cell.querySelectorAll('.jp-OutputArea-output img').length,
    }));
}"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def jupyterlab(workdir):
    """A JupyterLab server on a free loopback port, serving copies of the notebooks.

    Copies, because running cells changes a notebook and nothing here may write to the
    repository. Yields (base URL, token); the server stops on the way out, also on failure.
    """
    root = workdir / "notebooks"
    shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for plugin, values in LAB_SETTINGS.items():
        path = workdir / "settings" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = free_port(), secrets.token_hex(16)
    log = (SHOTS / "jupyterlab.log").open("w")
    server = subprocess.Popen(
        # --allow-root: CI runs as root, and the server is on loopback behind a token.
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         f"--LabApp.user_settings_dir={workdir / 'settings'}",
         f"--LabApp.workspaces_dir={workdir / 'workspaces'}"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while not answers(f"{base}/api/status?token={token}"):
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"JupyterLab did not start; see {log.name}")
            time.sleep(0.5)
        yield base, token
    finally:
        server.terminate()  # the server shuts its kernels down on SIGTERM
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def answers(url):
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False


def shut_down_kernels(base, token):
    """A notebook's kernel holds torch and TensorFlow: free them before the next ones."""
    api = f"{base}/api/kernels"
    headers = {"Authorization": f"token {token}"}
    with urllib.request.urlopen(urllib.request.Request(api, headers=headers)) as r:
        kernels = json.load(r)
    for kernel in kernels:
        urllib.request.urlopen(urllib.request.Request(f"{api}/{kernel['id']}", headers=headers, method="DELETE"))


def menu(page, top, item):
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{top}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()


def idle(page):
    # The status bar says "Python 3 (ipykernel) | Idle" once the kernel is up.
    return page.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"\| Idle$"))


def start_run(page, base, token, path):
    """Open, clear, Run All Cells. Returns the time the run started."""
    # A workspace of its own, so the tabs of earlier notebooks are not restored next to it.
    page.goto(f"{base}/lab/workspaces/{path.stem}/tree/{path.name}?token={token}")
    # JupyterLab asks for a kernel first if it cannot tell which one the notebook wants.
    kernel_dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
    expect(idle(page).or_(kernel_dialog)).to_be_visible(timeout=120_000)
    if kernel_dialog.is_visible():
        kernel_dialog.locator(".jp-mod-accept").click()
        expect(idle(page)).to_be_visible(timeout=120_000)
    # Clearing also resets the prompts to [ ], so every number seen later is from this run.
    menu(page, "Edit", "Clear Outputs of All Cells")
    if any(cell["prompt"] != "[ ]:" for cell in page.evaluate(CELLS_JS)):
        raise AssertionError("prompts kept their numbers after clearing")
    menu(page, "Run", "Run All Cells")
    return time.monotonic()


def settled(page):
    """The cells once nothing is queued and the kernel is idle, else None. Run All stops at
    the first error, leaving later cells unrun, so this does not wait for every prompt."""
    cells = page.evaluate(CELLS_JS)
    return cells if idle(page).is_visible() and not any(c["prompt"] == "[*]:" for c in cells) else None


def judged(page, path, cells, seconds):
    """(ok, the report line) for a run that has settled; a screenshot of it in build/e2e/."""
    figure = page.locator(".jp-OutputArea-output img").first
    if figure.count():
        figure.scroll_into_view_if_needed()
    page.screenshot(path=SHOTS / f"lab-{path.stem}.png")
    # Cells that ran show [1]:, [2]:, ...; a cell that never ran keeps [ ]:.
    ran = [c["prompt"] for c in cells if re.fullmatch(r"\[\d+\]:", c["prompt"])]
    in_order = ran == [f"[{n}]:" for n in range(1, len(ran) + 1)]
    errors = [text for c in cells for text in c["stderr"]]
    line = (f"{len(ran)}/{len(cells)} code cells executed in the browser{'' if in_order else ' (out of order)'},"
            f" {len(errors)} error or stderr outputs, figures: {sum(c['figures'] for c in cells)}, {seconds:.0f} s")
    if errors:
        line += "\n    first error: " + errors[0].replace("\n", "\n    ")
    return len(ran) == len(cells) and in_order and not errors, line


def check_lab(context):
    """Every notebook run from the Run menu, AT_ONCE at a time, each in its own page and kernel."""
    results = []
    with tempfile.TemporaryDirectory(prefix="posenc-e2e-") as tmp, jupyterlab(Path(tmp)) as (base, token):
        for group in (NOTEBOOKS[i:i + AT_ONCE] for i in range(0, len(NOTEBOOKS), AT_ONCE)):
            pages, started, lines = {}, {}, {}
            for path in group:
                pages[path] = context.new_page()
                try:
                    started[path] = start_run(pages[path], base, token, path)
                except Exception as error:  # report it and go on to the next notebook
                    lines[path] = False, f"{type(error).__name__}: {error}"
            while len(lines) < len(group):
                time.sleep(1)
                for path in started.keys() - lines.keys():
                    seconds = time.monotonic() - started[path]
                    try:
                        if cells := settled(pages[path]):
                            lines[path] = judged(pages[path], path, cells, seconds)
                        elif seconds > RUN_TIMEOUT_S:
                            lines[path] = False, f"still running after {RUN_TIMEOUT_S} s"
                    except Exception as error:
                        lines[path] = False, f"{type(error).__name__}: {error}"
            for path in group:
                ok, line = lines[path]
                print(f"lab   {path.stem:<22} {'ok  ' if ok else 'FAIL'} {line}", flush=True)
                results.append(ok)
                pages[path].close()  # unsaved: the copy on disk keeps its stored outputs
            shut_down_kernels(base, token)
    return results


def check_translated_lab(context):
    results = []
    with tempfile.TemporaryDirectory(prefix="posenc-e2e-") as tmp, jupyterlab(Path(tmp)) as (base, token):
        page = context.new_page()
        for language in LANGUAGES:
            for path in sorted((ROOT / "notebooks" / language).glob("*.ipynb")):
                cells = json.loads(path.read_text())["cells"]
                title = "".join(cells[0]["source"]).splitlines()[0].removeprefix("# ")
                page.goto(f"{base}/lab/workspaces/{language}-{path.stem}/tree/{language}/{path.name}?token={token}")
                panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
                shown = panel.locator(".jp-RenderedMarkdown h1").first
                try:
                    expect(shown).to_have_text(re.compile(re.escape(title)), timeout=120_000)
                    counted = panel.locator(".jp-Cell").count()
                    ok, line = counted == len(cells), f"{counted} of {len(cells)} cells shown, title {title!r}"
                except AssertionError as error:
                    ok, line = False, f"no title {title!r}: {error}"
                page.screenshot(path=SHOTS / f"lab-{language}-{path.stem}.png")
                print(f"lab   {language}/{path.stem:<22} {'ok  ' if ok else 'FAIL'} {line}", flush=True)
                results.append(ok)
        page.close()
    return results


def stored_figures(path):
    cells = json.loads(path.read_text())["cells"]
    return sum("image/png" in o.get("data", {}) for c in cells if c["cell_type"] == "code" for o in c["outputs"])


def language_links(page, language):
    """The switcher's links on ``page``, each checked: it names another language and its file exists."""
    links = page.locator(".sidebar-languages a").evaluate_all("links => links.map(a => [a.lang, a.href])")
    wanted = {code.replace("_", "-") for code in ("en", *LANGUAGES) if code != language}
    return {lang for lang, href in links if Path(urllib.parse.urlparse(href).path).exists()} == wanted == {lang for lang, _ in links}


def check_docs(context):
    results = []
    page = context.new_page()
    for language in ("en", *LANGUAGES):
        site = SITE if language == "en" else SITE / language
        notebooks = NOTEBOOKS if language == "en" else sorted((ROOT / "notebooks" / language).glob("*.ipynb"))
        page.goto((site / "index.html").as_uri())
        expect(page.locator("h1").first).to_have_text(re.compile("posenc"))
        page.screenshot(path=SHOTS / f"docs-{language}-index.png")
        for path in notebooks:
            page.goto((site / "notebooks" / f"{path.stem}.html").as_uri())
            figures = page.locator(".cell_output img")
            shown = figures.evaluate_all("imgs => imgs.filter(i => i.complete && i.naturalWidth > 0).length")
            wanted = stored_figures(path)
            # MathJax, served by the site itself, turns each .math element into an mjx-container;
            # its startup promise settles once the page is typeset (no MathJax: nothing to wait for).
            page.evaluate("() => window.MathJax?.startup?.promise")
            maths, typeset = page.locator(".math").count(), page.locator(".math mjx-container").count()
            switcher = language_links(page, language)
            tagged = page.locator("html").get_attribute("lang") == language.replace("_", "-")
            ok = shown == wanted > 0 and typeset == maths and switcher and tagged
            if figures.count():
                figures.first.scroll_into_view_if_needed()
            page.screenshot(path=SHOTS / f"docs-{language}-{path.stem}.png")
            print(f"docs  {language:<5} {path.stem:<22} {'ok  ' if ok else 'FAIL'} {shown} of {wanted} stored figures shown,"
                  f" {typeset} of {maths} formulas typeset, language links {'ok' if switcher else 'BROKEN'},"
                  f" html lang {'ok' if tagged else 'WRONG'}", flush=True)
            results.append(ok)
    page.goto((SITE / "docs" / "api.html").as_uri())
    documented = page.locator("dl.py.function, dl.py.class").count()
    print(f"docs  {'API reference':<28} {'ok  ' if documented else 'FAIL'} {documented} functions and classes")
    results.append(documented > 0)
    page.close()
    return results


def main():
    if not (SITE / "index.html").exists():
        sys.exit(f"{SITE} has no site: run `make docs` first")
    shutil.rmtree(SHOTS, ignore_errors=True)  # only this run's screenshots
    SHOTS.mkdir(parents=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.route(EXTERNAL, lambda route: route.abort())
        try:
            results = check_lab(context) + check_translated_lab(context) + check_docs(context)
        finally:
            browser.close()
    print(f"screenshots in {SHOTS.relative_to(ROOT)}/")
    print(f"e2e: {sum(results)} passed, {len(results) - sum(results)} failed")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
