"""The tenant and the end user where an operator names them (docs/architecture.md, "Tenants and users"): the CLI's
--tenant / --user on run and chat, checked as a gateway scope's name is, and the context
variables they become. Pure."""

from __future__ import annotations

import pytest

from durable_teams.cli.command_line import parser
from durable_teams.workflows.tenancy import TENANT, USER, tenancy_context, tenant_of, user_of

pytestmark = pytest.mark.pure


@pytest.mark.parametrize("command", [["run", "vault", "recall"], ["chat", "vault"]])
def test_run_and_chat_take_a_tenant_and_a_user(command: list[str]) -> None:
    args = parser().parse_args([*command, "--tenant", "shop.eu-1", "--user", "users/org/alice"])
    assert (args.tenant, args.user) == ("shop.eu-1", "users/org/alice")
    assert parser().parse_args(command).tenant is None


@pytest.mark.parametrize(("flag", "value", "why"), [
    ("--tenant", "shop eu", "a tenant's name is 1-64 letters"),
    ("--tenant", "s" * 65, "a tenant's name is 1-64 letters"),
    ("--user", " ", "a user id is 1 to 256 characters, not blank"),
    ("--user", "u" * 257, "a user id is 1 to 256 characters, not blank"),
])
def test_a_tenant_or_user_that_cannot_be_one_is_refused_in_one_line(
        flag: str, value: str, why: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        parser().parse_args(["run", "vault", "recall", flag, value])
    assert stop.value.code == 2 and why in capsys.readouterr().err


def test_the_context_variables_of_a_tenant_and_a_user() -> None:
    assert tenancy_context("shop", "u-42") == {TENANT: "shop", USER: "u-42"}
    assert tenancy_context(None, " ") == {} and tenancy_context("shop") == {TENANT: "shop"}
    assert (tenant_of({TENANT: "shop"}), user_of({USER: 42}), user_of({USER: True})) == ("shop", "42", None)
