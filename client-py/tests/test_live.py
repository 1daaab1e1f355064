"""Client and AsyncClient against a real service (DSH_URL, DSH_KEY; skipped without them).

What a user notices: agents made, found and gone; batches that report progress and run once
however often a lost answer makes the client send them; files that come back byte for byte and
stay inside the workspace; exec's exit codes and timeouts; event streams that resume after a cut
without losing or repeating an event; approvals answered from here; terminals typed into; pause and resume, checkpoints rolled back
and workspace snapshots an agent is made from; errors with their stable codes.
"""

import asyncio
import io
import os
import tarfile
import tempfile
import threading
import time
import unittest

import httpx

from dsh_sandbox import AsyncClient, Client, DshError, DshToolError, Retry, text_of

URL = os.environ.get("DSH_URL")
KEY = os.environ.get("DSH_KEY", "")
needs_service = unittest.skipUnless(URL, "no service: set DSH_URL and DSH_KEY")


def bash(command: str) -> dict:
    return {"name": "bash", "arguments": {"command": command, "description": "test"}}


class LoseFirstCallAnswer(httpx.HTTPTransport):
    """Sends the first POST /calls to the service, then drops its answer as a cut connection does."""

    def __init__(self) -> None:
        super().__init__()
        self.cut = False
        self.keys = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.method == "POST" and request.url.path.endswith("/calls"):
            self.keys.append(request.headers.get("idempotency-key"))
            if not self.cut:
                self.cut = True
                response.read()
                response.close()
                raise httpx.ReadError("connection reset before the answer was read")
        return response


class CutStream(httpx.SyncByteStream):
    """Passes an event stream through until `events` events went by, then fails as a reset does."""

    def __init__(self, inner: httpx.SyncByteStream, events: int) -> None:
        self.inner, self.events = inner, events

    def __iter__(self):
        seen = 0
        for chunk in self.inner:
            start = 0
            while (at := chunk.find(b"event: event", start)) >= 0 and (end := chunk.find(b"\n\n", at)) >= 0:
                seen, start = seen + 1, end + 2
                if seen == self.events:
                    yield chunk[:start]
                    raise httpx.ReadError("connection reset mid-stream")
            yield chunk

    def close(self) -> None:
        self.inner.close()


class CutFirstEventStream(httpx.HTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.resumed_from = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.headers.get("accept") != "text/event-stream" or request.method != "GET":
            return response
        self.resumed_from.append(request.headers.get("last-event-id"))
        if len(self.resumed_from) > 1:
            return response
        return httpx.Response(response.status_code, headers=response.headers, stream=CutStream(response.stream, 2),
                              request=request)


@needs_service
class SyncClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = Client(URL, KEY)
        self.made = []

    def tearDown(self) -> None:
        for agent in self.made:
            try:
                self.client.agents.delete(agent.id)
            except DshError:
                pass
        self.client.close()

    def agent(self, client=None, **options):
        agent = (client or self.client).agents.create(preset="standard", **options)
        self.made.append(agent)
        return agent

    def test_agents_are_made_found_listed_and_deleted(self) -> None:
        agent = self.agent()
        self.assertEqual(self.client.agents.get(agent.id).info["id"], agent.id)
        self.assertIn(agent.id, [a.id for a in self.client.agents.list()])
        self.client.agents.delete(agent.id)
        with self.assertRaises(DshError) as caught:
            self.client.agents.get(agent.id)
        self.assertEqual((caught.exception.code, caught.exception.status), ("NOT_FOUND", 404))
        with Client(URL, "dsk_not-a-key") as stranger, self.assertRaises(DshError) as refused:
            stranger.agents.list()
        self.assertEqual(refused.exception.code, "UNAUTHORIZED")

    def test_a_batch_reports_progress_and_answers_in_call_order(self) -> None:
        agent = self.agent()
        progress = []
        results = agent.batch([bash("echo one"), {"name": "no_such_tool"}, bash("echo two")],
                              on_progress=progress.append)
        self.assertEqual([r["ok"] for r in results], [True, False, True])
        self.assertEqual((text_of(results[0]), text_of(results[2])), ("one", "two"))
        self.assertEqual(results[1]["error"]["code"], "UNKNOWN_TOOL")
        self.assertIn("tool.result", [event["type"] for event in progress])
        self.assertEqual(agent.call("bash", {"command": "echo hi", "description": "x"})["value"]["stdout"], "hi\n")
        with self.assertRaises(DshToolError) as failed:
            agent.call("bash", {"command": "true"})
        self.assertEqual(failed.exception.code, "INVALID_ARGUMENTS")

    def test_a_batch_whose_answer_was_lost_is_retried_and_runs_once(self) -> None:
        transport = LoseFirstCallAnswer()
        with Client(URL, KEY, transport=transport, retry=Retry(attempts=3, base_delay_s=0.05)) as client:
            agent = self.agent(client)
            (result,) = agent.batch([bash("echo ran >> count.txt; wc -l < count.txt")])
            self.assertTrue(result["ok"])
            self.assertEqual(agent.files.read_text("count.txt"), "ran\n")
            self.assertEqual(len(transport.keys), 2)
            self.assertEqual(transport.keys[0], transport.keys[1])
        with Client(URL, KEY, transport=LoseFirstCallAnswer(), retry=False) as once:
            with self.assertRaises(httpx.ReadError):
                once.agents.get(agent.id).batch([bash("true")])

    def test_files_come_back_byte_for_byte_and_stay_in_the_workspace(self) -> None:
        agent = self.agent()
        data = bytes(range(256)) * 64 + b"\xff\xfe\x00"
        self.assertEqual(agent.files.write("bin/data", data)["bytes"], len(data))
        self.assertEqual(agent.files.read("bin/data"), data)
        with tempfile.TemporaryDirectory() as local:
            big = os.urandom(3 * 1024 * 1024 + 5)
            with open(os.path.join(local, "big"), "wb") as out:
                out.write(big)
            self.assertEqual(agent.files.upload("big.bin", os.path.join(local, "big"))["bytes"], len(big))
            self.assertEqual(agent.files.download("big.bin", os.path.join(local, "back")), len(big))
            with open(os.path.join(local, "back"), "rb") as back:
                self.assertEqual(back.read(), big)
            tar = io.BytesIO()
            with tarfile.open(fileobj=tar, mode="w") as archive:
                for name, text in (("t/a.txt", b"A"), ("t/b.txt", b"BB")):
                    info = tarfile.TarInfo(name)
                    info.size = len(text)
                    archive.addfile(info, io.BytesIO(text))
            agent.files.upload_archive("unpacked", tar.getvalue())
            self.assertEqual(agent.files.read_text("unpacked/t/b.txt"), "BB")
            agent.files.download_archive("unpacked", os.path.join(local, "out.tar"))
            with tarfile.open(os.path.join(local, "out.tar")) as archive:
                self.assertTrue(any(name.endswith("t/a.txt") for name in archive.getnames()))
        self.assertEqual([e["name"] for e in agent.files.list("unpacked/t")["entries"]], ["a.txt", "b.txt"])
        with self.assertRaises(DshError) as not_empty:
            agent.files.remove("unpacked")
        self.assertEqual(not_empty.exception.code, "DIRECTORY_NOT_EMPTY")
        agent.files.remove("unpacked", recursive=True)
        self.assertNotIn("unpacked", [e["name"] for e in agent.files.list()["entries"]])
        for outside in ("../../etc/passwd", "/etc/passwd"):
            with self.assertRaises(DshError) as escaped:
                agent.files.read(outside)
            self.assertEqual(escaped.exception.code, "PATH_OUTSIDE_WORKSPACE", outside)

    def test_exec_returns_exit_codes_and_output_and_kills_at_its_timeout(self) -> None:
        agent = self.agent()
        ran = agent.exec('read line; echo "$GREETING $line"; echo oops >&2; exit 3', env={"GREETING": "hi"},
                         stdin="there\n")
        self.assertEqual((ran["exitCode"], ran["stdout"], ran["stderr"]), (3, "hi there\n", "oops\n"))
        with self.assertRaises(DshError) as slow:
            agent.exec("sleep 30", timeout_ms=300)
        self.assertEqual(slow.exception.code, "EXEC_TIMEOUT")

    def test_an_event_stream_cut_mid_way_resumes_without_losing_or_repeating(self) -> None:
        agent = self.agent()
        agent.batch([bash("echo 1"), bash("echo 2"), bash("echo 3")])
        last = agent.usage()["log"]["events"]
        self.assertGreater(last, 4)
        transport = CutFirstEventStream()
        with Client(URL, KEY, transport=transport) as client:
            seqs = []
            for event in client.agents.get(agent.id).events(after=0, retry_s=0.05):
                seqs.append(event["seq"])
                if event["seq"] >= last:
                    break
        self.assertEqual(seqs, list(range(1, last + 1)))
        self.assertEqual(transport.resumed_from[0], "0")
        self.assertGreater(int(transport.resumed_from[1]), 0)
        later = next(iter(agent.events(after=last - 1)))
        self.assertEqual(later["seq"], last)

    def test_leaving_an_event_stream_closes_it(self) -> None:
        # The service holds a bounded number of a tenant's requests at once (16 by default): a
        # stream left open would hold one of them, and one past the bound is refused (RATE_LIMITED).
        agent = self.agent()
        agent.files.write("x.txt", "x")
        for _ in range(24):
            for event in agent.events(after=0):
                self.assertEqual(event["seq"], 1)
                break
        held = []
        with self.assertRaises(DshError) as refused:
            for _ in range(24):
                stream = agent.events(after=0, reconnect=False)
                next(stream)
                held.append(stream)
        self.assertEqual(refused.exception.code, "RATE_LIMITED")
        self.assertLess(len(held), 24)  # so the 24 streams left above were closed, or this had failed there
        for stream in held:
            stream.close()
        self.assertEqual(next(agent.events(after=0))["seq"], 1)

    def test_approvals_are_answered_from_here(self) -> None:
        agent = self.agent(policy={"ask": ["bash"]})
        outcome = {}
        worker = threading.Thread(target=lambda: outcome.update(results=agent.batch([bash("echo approved")])))
        worker.start()
        pending = []
        deadline = time.monotonic() + 30
        while not pending and time.monotonic() < deadline:
            pending = agent.requests.list("pending")
            time.sleep(0.05)
        self.assertEqual(len(pending), 1)
        request = pending[0]
        self.assertEqual((request["kind"], request["payload"]["toolName"]), ("approval", "bash"))
        self.assertEqual(agent.requests.get(request["id"])["id"], request["id"])
        agent.requests.answer(request["id"], {"allow": True})
        worker.join(30)
        self.assertEqual(text_of(outcome["results"][0]), "approved")
        with self.assertRaises(DshError):
            agent.requests.answer(request["id"], {"allow": False})

    def test_a_terminal_attached_synchronously_runs_until_its_program_exits(self) -> None:
        agent = self.agent()
        opened = agent.terminals.open(command=["bash"])
        with agent.terminals.attach(opened["id"]) as term:
            term.send("echo sync-$((40 + 2))\r")
            self.assertIn("sync-42", term.read_until("sync-42"))
            term.send("exit\r")
            rest = b"".join(term)
            self.assertIsInstance(rest, bytes)
            self.assertEqual(term.close_code, 1000)
        with self.assertRaises(DshError) as refused:
            agent.terminals.attach("terminal-none")
        self.assertEqual(refused.exception.code, "NOT_FOUND")
        self.client.agents.delete(agent.id)
        with self.assertRaises(DshError) as gone:
            agent.terminals.attach(opened["id"])
        self.assertEqual((gone.exception.code, gone.exception.status), ("NOT_FOUND", 404))

    def test_pause_checkpoints_rollback_and_snapshots(self) -> None:
        agent = self.agent()
        agent.files.write("a.txt", "one")
        agent.call("write", {"file_path": "a.txt", "content": "two"})
        checkpoints = agent.checkpoints()
        self.assertEqual([cp["tool"] for cp in checkpoints], ["file_upload", "write"])
        back = agent.rollback(seq=checkpoints[1]["seq"])
        self.assertEqual((back["undone"], back["restored"]), ([checkpoints[1]["callId"]], ["/workspace/a.txt"]))
        self.assertEqual(agent.files.read_text("a.txt"), "one")
        with self.assertRaises(DshError) as unknown:
            agent.rollback("never-ran")
        self.assertEqual((unknown.exception.code, unknown.exception.status), ("CHECKPOINT_NOT_FOUND", 404))
        with self.assertRaises(ValueError):
            agent.rollback("c1", seq=1)

        paused = agent.pause()
        self.assertTrue(paused["paused"])
        self.assertIn("processes", paused.get("lost", []))
        self.assertFalse(agent.resume()["paused"])
        self.assertEqual(agent.files.read_text("a.txt"), "one")

        try:
            snap = agent.snapshot()
        except DshError as error:  # workspaces that cannot be snapshotted here (Docker volumes)
            self.assertEqual((error.code, error.status), ("SNAPSHOT_UNSUPPORTED", 501))
            return
        self.assertEqual(agent.snapshots(), [snap])
        self.assertIn(snap, self.client.snapshots.list())
        self.assertEqual(self.client.snapshots.get(snap["id"]), snap)
        agent.files.write("a.txt", "after the snapshot")
        fork = self.agent(from_snapshot=snap["id"])
        self.assertEqual(fork.files.read_text("a.txt"), "one")
        self.client.snapshots.delete(snap["id"])
        with self.assertRaises(DshError) as gone:
            self.client.snapshots.get(snap["id"])
        self.assertEqual((gone.exception.code, gone.exception.status), ("NOT_FOUND", 404))
        self.assertEqual(fork.files.read_text("a.txt"), "one")

    def test_every_route_by_its_operation(self) -> None:
        agent = self.agent()
        tools = self.client.api("listTools", path={"id": agent.id})["tools"]
        self.assertIn("bash", [tool["name"] for tool in tools])
        self.assertEqual([t["name"] for t in agent.tools()], [t["name"] for t in tools])
        with self.assertRaises(DshError) as unknown:
            self.client.api("noSuchOperation")
        self.assertEqual(unknown.exception.code, "BAD_REQUEST")


@needs_service
class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.client = AsyncClient(URL, KEY)
        self.agent = await self.client.agents.create(preset="standard")

    async def asyncTearDown(self) -> None:
        await self.agent.delete()
        await self.client.aclose()

    async def test_the_same_api_awaited(self) -> None:
        seen = []

        async def progress(event: dict) -> None:
            seen.append(event["type"])

        results, listed = await asyncio.gather(self.agent.batch([bash("echo a")], on_progress=progress),
                                               self.client.agents.list())
        self.assertEqual(text_of(results[0]), "a")
        self.assertIn("tool.result", seen)
        self.assertIn(self.agent.id, [a.id for a in listed])
        await self.agent.files.write("x.txt", "é")
        self.assertEqual(await self.agent.files.read_text("x.txt"), "é")
        self.assertEqual((await self.agent.exec("cat x.txt"))["stdout"], "é")
        types = []
        async for event in self.agent.events(after=0):
            types.append(event["type"])
            if event["type"] == "tool.result":
                break
        self.assertIn("tool.call", types)
        with self.assertRaises(DshError) as gone:
            await self.client.agents.get("agt_gone")
        self.assertEqual(gone.exception.code, "NOT_FOUND")

    async def test_lifecycle_awaited(self) -> None:
        await self.agent.files.write("a.txt", "one")
        await self.agent.files.write("a.txt", "two")
        checkpoints = await self.agent.checkpoints()
        self.assertEqual(len(checkpoints), 2)
        back = await self.agent.rollback(seq=checkpoints[1]["seq"])
        self.assertEqual(back["restored"], ["/workspace/a.txt"])
        self.assertEqual(await self.agent.files.read_text("a.txt"), "one")
        self.assertTrue((await self.agent.pause("stop"))["paused"])
        self.assertFalse((await self.agent.resume())["paused"])
        try:
            snap = await self.agent.snapshot()
        except DshError as error:
            self.assertEqual(error.code, "SNAPSHOT_UNSUPPORTED")
            return
        self.assertEqual(await self.agent.snapshots(), [snap])
        fork = await self.client.agents.create(preset="standard", from_snapshot=snap["id"])
        try:
            self.assertEqual(await fork.files.read_text("a.txt"), "one")
        finally:
            await fork.delete()
            await self.client.snapshots.delete(snap["id"])
        self.assertNotIn(snap["id"], [s["id"] for s in await self.client.snapshots.list()])

    async def test_leaving_an_event_stream_closes_it(self) -> None:
        await self.agent.files.write("x.txt", "x")
        for _ in range(24):
            async for event in self.agent.events(after=0):
                self.assertEqual(event["seq"], 1)
                break

    async def test_a_terminal_is_typed_into_resized_and_interrupted(self) -> None:
        opened = await self.agent.terminals.open(command=["bash"], cols=80, rows=24)
        self.assertIn(opened["id"], [t["id"] for t in await self.agent.terminals.list()])
        async with await self.agent.terminals.attach(opened["id"]) as term:
            await term.send('echo "{"type":"signal"}" done-$((2 + 3))\r')
            self.assertIn("done-5", await term.read_until("done-5"))
            await term.resize(120, 40)
            await term.send("stty size\r")
            await term.read_until("40 120")
            await term.send("sleep 600\r")
            # The signal goes to the terminal's foreground program: once sleep is that program.
            for _ in range(200):
                if (await self.agent.exec("pgrep -x sleep"))["exitCode"] == 0:
                    break
                await asyncio.sleep(0.05)
            await term.signal("SIGINT")
            await term.send("echo after-$((6 * 7))\r")
            await term.read_until("after-42")
        await self.agent.terminals.close(opened["id"])
        with self.assertRaises(DshError) as refused:
            await self.agent.terminals.attach("terminal-none")
        self.assertEqual(refused.exception.code, "NOT_FOUND")


if __name__ == "__main__":
    unittest.main()
