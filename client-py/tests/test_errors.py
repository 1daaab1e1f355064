"""Errors keep the service's stable code; retries follow the rules (no service needed)."""

import unittest

import httpx

from dsh_sandbox import DshError, DshToolError, Retry
from dsh_sandbox._common import StreamCut, batch_body, path_of, retry_delay
from dsh_sandbox.errors import error_from_body


class ErrorsTest(unittest.TestCase):
    def test_the_service_body_gives_code_message_and_data(self) -> None:
        body = '{"error":{"code":"REVISION_CONFLICT","message":"stale","data":{"currentRevision":3}}}'
        error = error_from_body(409, body)
        self.assertEqual((error.code, error.status, error.message, error.data), ("REVISION_CONFLICT", 409, "stale",
                                                                                  {"currentRevision": 3}))
        self.assertIn("REVISION_CONFLICT", str(error))

    def test_a_page_that_is_not_the_service_gets_the_code_of_its_status(self) -> None:
        self.assertEqual(error_from_body(502, "<html>bad gateway</html>").code, "INTERNAL")
        self.assertEqual(error_from_body(404, "").code, "NOT_FOUND")
        self.assertEqual(error_from_body(429, "", "2").retry_after_s, 2.0)
        self.assertEqual(error_from_body(400, '{"error":"not an object"}').code, "BAD_REQUEST")
        self.assertIn("bad gateway", error_from_body(502, "<html>bad gateway</html>").message)

    def test_a_failed_call_is_a_tool_error_with_its_result(self) -> None:
        result = {"id": "c1", "name": "x", "ok": False, "content": [], "error": {"code": "DENIED", "message": "no"}}
        error = DshToolError(result)
        self.assertIsInstance(error, DshError)
        self.assertEqual((error.code, error.result), ("DENIED", result))


class RetryRulesTest(unittest.TestCase):
    rules = Retry(attempts=4, base_delay_s=0.25, max_delay_s=5.0)

    def test_lost_answers_and_unavailable_services_are_retried(self) -> None:
        for error in (httpx.ReadError("cut"), httpx.ConnectError("refused"), StreamCut(),
                      DshError("SHUTTING_DOWN", "x", status=503), DshError("INTERNAL", "x", status=502),
                      DshError("IDEMPOTENCY_KEY_IN_PROGRESS", "x", status=409)):
            delay = retry_delay(error, 1, self.rules)
            self.assertIsNotNone(delay, error)
            self.assertLessEqual(delay, 0.5)

    def test_retry_after_wins_up_to_the_longest_delay(self) -> None:
        self.assertEqual(retry_delay(DshError("RATE_LIMITED", "x", status=429, retry_after_s=2), 0, self.rules), 2)
        self.assertEqual(retry_delay(DshError("SHUTTING_DOWN", "x", status=503, retry_after_s=60), 0, self.rules), 5)

    def test_answers_are_not_retried(self) -> None:
        for error in (DshError("RATE_LIMITED", "x", status=429), DshError("INTERNAL", "x", status=500),
                      DshError("BAD_REQUEST", "x", status=400), ValueError("bug")):
            self.assertIsNone(retry_delay(error, 0, self.rules), error)


class RequestShapesTest(unittest.TestCase):
    def test_calls_without_ids_are_numbered_and_get_arguments(self) -> None:
        body = batch_body([{"name": "a"}, {"name": "b", "id": "mine", "arguments": {"x": 1}}], "s1")
        self.assertEqual(body, {"calls": [{"name": "a", "id": "c1", "arguments": {}},
                                          {"name": "b", "id": "mine", "arguments": {"x": 1}}], "step": "s1"})

    def test_path_values_are_encoded_so_they_cannot_leave_their_segment(self) -> None:
        self.assertEqual(path_of("/v1/agents/{id}", id="../tenants?x=1#"), "/v1/agents/..%2Ftenants%3Fx%3D1%23")
        with self.assertRaises(DshError):
            path_of("/v1/agents/{id}")


if __name__ == "__main__":
    unittest.main()
