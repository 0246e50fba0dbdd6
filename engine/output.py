"""What a request produces: its text, built token by token, and the records handed back.

Detokenising a completion by decoding all of its ids again for every new token costs
O(n) per token, O(n^2) per completion. `TextOutput` decodes only a short window of
recent ids instead (the method vLLM and Hugging Face's streamers use):

    read   = decode(ids[prefix:read_at])        # text already committed, as context
    window = decode(ids[prefix:])               # the same context plus the new ids

and commits `window[len(read):]` once it does not end in U+FFFD, i.e. once no UTF-8
character is left half-finished; the next window starts at that piece's ids, kept as
context (a SentencePiece-style decoder drops a leading space at the start of a text).
For a byte-level BPE tokenizer a cut where the decoded text is complete is a character
boundary of the whole text too, so the committed pieces joined equal
`decode(all ids)` exactly; `pending` holds the decode of the ids after the last cut.

Stop strings are looked for only where a new match can be: from `max_stop - 1`
characters before the previous end of the text, through the pending text. A stream
holds back the last `max_stop - 1` committed characters while running, since they may
yet turn out to start a stop string.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from engine.tokenizer import Tokenizer

REPLACEMENT = "\ufffd"  # what a decoder writes for an incomplete UTF-8 character


@dataclass
class Usage:
    prompt_tokens: int
    cached_tokens: int  # prompt tokens served from the prefix cache (block-floored, < prompt_tokens)
    completion_tokens: int


@dataclass
class RequestOutput:
    request_id: str
    text: str
    token_ids: list[int]  # completion tokens (a final EOS/stop token included)
    finish_reason: str | None  # "stop" | "length" | "abort" | "error"; None while running
    usage: Usage
    num_preemptions: int = 0
    ttft_s: float | None = None  # submission to first token
    latency_s: float | None = None  # submission to finish
    error: str | None = None
    stop_sequence: str | None = None  # the stop string that ended the text, if one did


@dataclass
class StreamChunk:
    delta: str  # new text since the previous chunk
    token_ids: list[int]  # new token ids since the previous chunk
    finished: bool
    output: RequestOutput  # the request's state after this chunk


def find_stop(text: str, stops: list[str]) -> tuple[int, str | None]:
    """Where the first stop string (in list order) that occurs in `text` begins, and which; (-1, None) if none."""
    for s in stops:
        at = text.find(s)
        if at != -1:
            return at, s
    return -1, None


class TextOutput:
    """One request's completion text. `push` each generated token that is text (not a
    final EOS or stop token), then `close` when the request finishes.

    Committed text is kept as a list of pieces (joined when `text` is read), with its last
    `hold` characters and the part a stream has not sent yet beside it, so a token costs
    the same at the 4,000th as at the first."""

    def __init__(self, tokenizer: Tokenizer, stop: Sequence[str] = ()):
        self.tokenizer = tokenizer
        self.stop = list(stop)
        self.hold = max((len(s) - 1 for s in self.stop), default=0)
        self.ids: list[int] = []
        self.prefix = 0  # first id of the decode window
        self.read_at = 0  # ids before this are committed
        self.pieces: list[str] = []  # committed text: final unless a stop string cuts it
        self.length = 0  # characters committed
        self.tail = ""  # the last `hold` committed characters, where a stop string may begin
        self.unsent = ""  # the committed text a stream has not sent yet (its end)
        self.pending = ""  # decode of ids[read_at:]: may end in a half-finished character
        self.stopped_by: str | None = None  # the stop string that ended the text

    @property
    def text(self) -> str:
        if len(self.pieces) > 1:
            self.pieces = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""

    def push(self, token: int) -> bool:
        """Add one token; True when a stop string now ends the text (it is cut off)."""
        self.ids.append(token)
        decode = self.tokenizer.decode
        read = decode(self.ids[self.prefix : self.read_at]) if self.read_at > self.prefix else ""
        window = decode(self.ids[self.prefix :])
        new = window[len(read) :]
        searched, piece = self.tail, ""
        if new.endswith(REPLACEMENT):
            self.pending = new
        else:
            piece, self.pending = new, ""
            self._commit(piece)
            self.prefix, self.read_at = self.read_at, len(self.ids)
        return bool(self.stop) and self._cut_at_stop(searched, piece)

    def _commit(self, piece: str) -> None:
        if not piece:
            return
        self.pieces.append(piece)
        self.length += len(piece)
        self.unsent += piece
        self.tail = (self.tail + piece)[-self.hold :] if self.hold else ""

    def _cut_at_stop(self, searched: str, piece: str) -> bool:
        # A match beginning before the last `hold` characters committed before this token
        # would lie wholly in text that an earlier check searched.
        window = searched + piece + self.pending
        at, self.stopped_by = find_stop(window, self.stop)
        if at == -1:
            return False
        sent = self.length - len(self.unsent)
        end = self.length - len(piece) - len(searched) + at
        text = (self.text + self.pending)[:end]
        self.pieces, self.length, self.pending = [text], end, ""
        self.unsent = text[sent:]
        return True

    def close(self) -> None:
        """The request finished: commit what is pending, half-finished characters included."""
        self._commit(self.pending)
        self.pending = ""

    def stream_delta(self, finished: bool) -> str:
        """Text not yet sent that is safe to send: all of it once finished, else all but a
        tail that may be the start of a stop string."""
        n = len(self.unsent) - (0 if finished else self.hold)
        if n <= 0:
            return ""
        delta, self.unsent = self.unsent[:n], self.unsent[n:]
        return delta
