"""The event-stream parser, fed text cut anywhere (no service needed)."""

import unittest

from dsh_sandbox.sse import SseParser


def parse(*chunks: str):
    parser = SseParser()
    out = []
    for chunk in chunks:
        out.extend(parser.feed(chunk))
    return out


class SseParserTest(unittest.TestCase):
    def test_messages_with_ids_events_and_multiline_data(self) -> None:
        text = "id: 1\nevent: event\ndata: {\"a\":\ndata: 1}\n\n: ping\n\nevent: deleted\ndata: {}\n\n"
        messages = parse(text)
        self.assertEqual([(m.event, m.data, m.id) for m in messages],
                         [("event", '{"a":\n1}', "1"), ("deleted", "{}", "1")])

    def test_the_same_messages_whatever_the_cuts_and_line_ends(self) -> None:
        text = "id: 7\r\nevent: progress\r\ndata: x\r\n\r\ndata: y\rdata: z\r\r"
        whole = [(m.event, m.data, m.id) for m in parse(text)]
        self.assertEqual(whole, [("progress", "x", "7"), ("message", "y\nz", "7")])
        for cut in range(1, len(text)):
            self.assertEqual([(m.event, m.data, m.id) for m in parse(text[:cut], text[cut:])], whole, cut)
        self.assertEqual([(m.event, m.data, m.id) for m in parse(*text)], whole)

    def test_comments_empty_messages_and_odd_fields_dispatch_nothing(self) -> None:
        self.assertEqual(parse(": ping\n\nevent: x\n\nretry: no\nid: a\0b\n\n"), [])
        (message,) = parse("retry: 250\ndata\n\n")
        self.assertEqual((message.data, message.retry), ("", 250))

    def test_a_partial_message_waits_for_its_blank_line(self) -> None:
        parser = SseParser()
        self.assertEqual(parser.feed("data: half"), [])
        self.assertEqual([m.data for m in parser.feed(" done\n\n")], ["half done"])


if __name__ == "__main__":
    unittest.main()
