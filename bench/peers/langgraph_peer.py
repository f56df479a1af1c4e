"""
bench/peers' LangGraph side: tether's scripted loop as a LangGraph graph with its PostgreSQL checkpointer.

A "model" node returns the next scripted tool call (an AIMessage), a "tool" node runs it with a subprocess
and appends its ToolMessage, and a conditional edge goes back to the model until the script ends. One
thread per run. In the approval variant the tool node first calls interrupt() and runs the command only
when resumed with Command(resume="approve").

Driven by bench/peers.ts over stdin/stdout, one JSON object a line:
  {"id", "op": "start", "thread", "calls": [argv, ...], "cwd", "approval": bool}
  {"id", "op": "resume", "thread", "decision": "approve" | "deny"}
each answered, once the graph stops, with {"id", "status": "done" | "waiting", "turns"} or {"id", "error"}.
Requests run concurrently, each in a task of its own.

  python langgraph_peer.py DATABASE_URL DURABILITY
"""

import asyncio
import json
import sys
from importlib.metadata import version

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

# thread → its script; kept out of the graph's state so the checkpoints hold what an agent's would.
scripts: dict[str, dict] = {}


def model(state: MessagesState, config) -> dict:
    script = scripts[config["configurable"]["thread_id"]]
    done = sum(1 for m in state["messages"] if isinstance(m, ToolMessage))
    if done >= len(script["calls"]):
        return {"messages": [AIMessage(content="done")]}
    call = {"name": "exec", "args": {"argv": script["calls"][done]}, "id": f"call-{done}"}
    return {"messages": [AIMessage(content="", tool_calls=[call])]}


def tool_node(approval: bool):
    async def tool(state: MessagesState, config) -> dict:
        call = state["messages"][-1].tool_calls[0]
        if approval and interrupt({"argv": call["args"]["argv"]}) != "approve":
            return {"messages": [ToolMessage(content="denied", tool_call_id=call["id"])]}
        cwd = scripts[config["configurable"]["thread_id"]]["cwd"]
        process = await asyncio.create_subprocess_exec(
            *call["args"]["argv"],
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        content = f"exit {process.returncode}\n{out.decode()}{err.decode()}"
        return {"messages": [ToolMessage(content=content, tool_call_id=call["id"])]}

    return tool


def next_node(state: MessagesState) -> str:
    return "tool" if state["messages"][-1].tool_calls else END


def build(checkpointer, approval: bool):
    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tool", tool_node(approval))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", next_node, ["tool", END])
    graph.add_edge("tool", "model")
    return graph.compile(checkpointer=checkpointer)


async def main(url: str, durability: str) -> None:
    async with AsyncConnectionPool(
        url,
        min_size=4,
        max_size=20,
        open=False,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
    ) as pool:
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
        graphs = {False: build(saver, False), True: build(saver, True)}
        out = sys.stdout

        def reply(message: dict) -> None:
            out.write(json.dumps(message) + "\n")
            out.flush()

        async def serve(request: dict) -> None:
            try:
                thread = request["thread"]
                config = {"configurable": {"thread_id": thread}}
                if request["op"] == "start":
                    scripts[thread] = {
                        "calls": request["calls"],
                        "cwd": request["cwd"],
                        "approval": bool(request.get("approval")),
                    }
                    given = {"messages": [{"role": "user", "content": "bench"}]}
                else:
                    given = Command(resume=request["decision"])
                graph = graphs[scripts[thread]["approval"]]
                state = await graph.ainvoke(given, config, durability=durability)
                waiting = bool(state.get("__interrupt__"))
                if not waiting:
                    del scripts[thread]
                turns = sum(1 for m in state["messages"] if isinstance(m, AIMessage))
                reply({"id": request["id"], "status": "waiting" if waiting else "done", "turns": turns})
            except Exception as error:  # the bench reports it and stops
                reply({"id": request["id"], "error": f"{type(error).__name__}: {error}"})

        reply({"ready": True, "langgraph": version("langgraph"), "python": sys.version.split()[0]})
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        tasks = set()
        while line := await reader.readline():
            task = asyncio.create_task(serve(json.loads(line)))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.gather(*tasks)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
