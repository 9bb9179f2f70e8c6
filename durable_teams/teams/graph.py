"""A team drawn as a Mermaid flowchart (`durable-teams graph <team>`). Pure: TeamSpec in, text out.

What is drawn: the supervisor (a hexagon naming its routing strategy) with an edge to each agent
(labelled with the handoff tool, or how the strategy picks it) and a dotted edge back; a swarm's
start agent and peer handoffs (labelled with the tool name); each agent's tools (stadium nodes,
`needs approval` and `return direct` noted) and MCP servers (cylinders); nested teams as subgraphs, entered through their
supervisor (or a swarm's start agent); agents that run as a child workflow are marked so; intents
(parallelograms) on the team's entry and on the agents that declare them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from durable_teams.workflows import handoff
from durable_teams.workflows.intents import Intent
from durable_teams.workflows.messages import AgentSpec, TeamSpec

_RESERVED = {"end", "graph", "subgraph", "flowchart", "click", "style", "class", "default"}


class _Ids:
    """Mermaid node ids made from names: letters, digits and `_` only, unique, never a keyword."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def new(self, name: str) -> str:
        base = re.sub(r"\W", "_", name, flags=re.ASCII) or "node"
        if base.lower() in _RESERVED or base[0].isdigit():
            base = f"n_{base}"
        node, n = base, 1
        while node in self.taken:
            n += 1
            node = f"{base}_{n}"
        self.taken.add(node)
        return node


def _label(text: str) -> str:
    """A quoted Mermaid label; markup characters as entities, a newline as a line break."""
    for char, entity in (("&", "#amp;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(char, entity)
    return '"' + text.replace("\n", "<br/>") + '"'


def team_graph(team: TeamSpec) -> str:
    """The Mermaid flowchart of `team` and every team nested in it."""
    lines = ["flowchart TD"]
    ids = _Ids()
    user = ids.new("user")
    lines.append(f"    {user}([{_label('user')}])")
    entry = _draw_team(team, ids, lines, "    ")
    lines.append(f"    {user} --> {entry}")
    return "\n".join(lines) + "\n"


def _draw_team(team: TeamSpec, ids: _Ids, lines: list[str], indent: str) -> str:
    """Draw `team`'s nodes and edges into `lines`; return the id work enters it through."""
    sup = team.supervisor
    sup_id = ids.new(sup.name) if sup else ""
    if sup is not None:
        lines.append(f"{indent}{sup_id}{{{{{_label(_supervisor_text(team))}}}}}")
        _draw_tools(team, sup_id, sup.tools, ids, lines, indent)
    entries = {name: _draw_agent(team, agent, ids, lines, indent)
               for name, agent in team.agents.items()}
    _draw_intents(sup_id or entries[team.start_agent or next(iter(team.agents))], team.intents, ids, lines, indent)
    if sup is None:
        for name, agent in team.agents.items():
            for tool_name, peer in _peer_handoffs(agent).items():
                lines.append(f"{indent}{entries[name]} -->|{_label(tool_name)}| {entries[peer]}")
        return entries[team.start_agent or next(iter(team.agents))]
    for name in sup.agents:
        lines.append(f"{indent}{sup_id} -->|{_label(_route_text(team, name))}| {entries[name]}")
        lines.append(f"{indent}{entries[name]} -.-> {sup_id}")
    return sup_id


def _draw_agent(team: TeamSpec, agent: AgentSpec, ids: _Ids, lines: list[str], indent: str) -> str:
    """Draw one agent (or nested team); return the id an edge into it should land on."""
    if agent.team is not None:
        box = ids.new(f"team_{agent.name}")
        kind = "swarm" if agent.team.supervisor is None else "nested team"
        lines.append(f"{indent}subgraph {box}[{_label(f'{agent.name} ({kind}, child workflow)')}]")
        entry = _draw_team(agent.team, ids, lines, indent + "    ")
        lines.append(f"{indent}end")
        return entry
    node = ids.new(agent.name)
    text = agent.name + ("\n(child workflow)" if agent.run_as_child else "")
    lines.append(f"{indent}{node}[{_label(text)}]")
    _draw_tools(team, node, [t for t in agent.tools if not _from_mcp(team, t)], ids, lines, indent)
    _draw_intents(node, agent.intents, ids, lines, indent)
    for server in agent.mcp:  # its tools are known only once a conversation lists them
        text = f"MCP server: {server.name}" + ("\n(needs approval)" if server.needs_approval else "")
        lines.append(f"{indent}{node} --- {ids.new(f'{node}_mcp_{server.name}')}[({_label(text)})]")
    return node


def _from_mcp(team: TeamSpec, tool: str) -> bool:
    spec = team.tools.get(tool)
    return spec is not None and spec.mcp_server is not None


def _draw_tools(team: TeamSpec, owner: str, tools: Sequence[str], ids: _Ids, lines: list[str],
                indent: str) -> None:
    for name in tools:
        spec = team.tools.get(name)
        notes = [] if spec is not None else ["built-in"]
        if spec is not None and spec.needs_approval:
            notes.append("needs approval")
        if spec is not None and spec.return_direct:
            notes.append("return direct")
        text = name + (f"\n({', '.join(notes)})" if notes else "")
        lines.append(f"{indent}{owner} --- {ids.new(f'{owner}_{name}')}([{_label(text)}])")


def _draw_intents(owner: str, intents: Sequence[Intent], ids: _Ids, lines: list[str], indent: str) -> None:
    """One parallelogram listing the owner's intents: phrases -> what each does."""
    if intents:
        text = "intents:\n" + "\n".join(f"{' | '.join(i.phrases)} -> {i.action}" for i in intents)
        lines.append(f"{indent}{owner} --- {ids.new(f'{owner}_intents')}[/{_label(text)}/]")


def _supervisor_text(team: TeamSpec) -> str:
    sup = team.supervisor
    assert sup is not None
    text = f"{sup.name}\n(supervisor, routing: {sup.strategy})"
    if sup.aggregate:
        text += f"\naggregate: {sup.aggregate}"
    if sup.parallel_tool_calls:
        text += f"\nparallel handoffs (up to {sup.max_parallel_handoffs})"
    return text


def _route_text(team: TeamSpec, agent: str) -> str:
    """The label of the supervisor's edge to `agent`: how work gets there."""
    sup = team.supervisor
    assert sup is not None
    if sup.strategy == "llm":
        return handoff.handoff_tool_name(agent, sup.handoff_tool_prefix)
    notes = []
    if sup.strategy == "rules":
        for rule in sup.rules:
            if rule.target == agent:
                notes.append(", ".join([*rule.keywords, *([f"/{rule.pattern}/"] if rule.pattern else [])]))
    if sup.strategy == "skills" and team.agents[agent].skills:
        notes.append(", ".join(team.agents[agent].skills))
    if sup.strategy in ("rules", "skills") and (sup.fallback_agent or sup.agents[0]) == agent:
        notes.append("fallback")
    return "; ".join([sup.strategy, *notes])


def _peer_handoffs(agent: AgentSpec) -> dict[str, str]:
    """Handoff tool name -> peer, as the workflow names them (workflows/roster.py)."""
    return {agent.handoff_tool_names.get(p) or handoff.handoff_tool_name(p): p for p in agent.handoffs}
