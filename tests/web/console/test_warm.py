"""`serve` compiles every console page in every language as it starts (`pages.console_templates`, in
`app._warm_console`), in the environments the pages then render with: no view after a restart pays the
compilation."""

from __future__ import annotations

from typing import Any

import pytest

from alertrouter.message import i18n
from alertrouter.web.console.language import LANGUAGE_COOKIE
from alertrouter.web.console.pages import console_templates, environment_of
from support.scenario import gpu_labels

from .conftest import REPO, App

PAGES = (
    "/incidents",
    "/silences",
    "/maintenance",
    "/alerts/muted",
    "/channels",
    "/nodes",
    "/oncall",
    "/heartbeats",
    "/rules",
)


async def test_every_page_is_compiled_ahead_in_every_language_and_rendered_from_that(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    await app.seed([gpu_labels("gpu-node-07", g, region="north") for g in (0, 3)])
    await app.login()
    incident = await app.incident_id("GPUHighTemp")

    listed = console_templates(app.asgi, app.runtime)
    templates = list((REPO / "templates" / "console").glob("*.j2"))
    assert len(listed) == len(templates) * len(i18n.LANGUAGES)
    for env, name in listed:
        env.get_template(name)  # as serve warms them

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("a console template was compiled at a view")

    for language in i18n.LANGUAGES:
        monkeypatch.setattr(environment_of(app.asgi, app.runtime, language), "compile", refuse)
    for language in i18n.LANGUAGES:
        app.client.cookies.set(LANGUAGE_COOKIE, language)
        for path in (*PAGES, f"/incidents/{incident}"):
            response = await app.client.get(path)
            assert response.status_code == 200, (language, path)
            assert f'lang="{language}"' in response.text
