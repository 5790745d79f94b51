"""Captured clients: real Kafka group traffic in, replayed through the simulated coordinator, compared out.

- `importer.import_capture(FILE, ports)`: a pcap/pcapng (through tshark), a tshark JSON export, or our JSONL
  events -> events of the input contract, the captured broker's responses (`tableio.captured`) and rejects.
  Underneath: segments.py (tshark), streams.py (TCP reassembly, Kafka framing), wire.py and messages.py
  (the group APIs' wire format, declared from Kafka's message specs), contract.py (messages -> rows),
  topics.py (a consumer group's topic ids named, and its TOPIC_METADATA rows, from the Metadata responses).
- The replay itself is below both engines: `tableio.captured_answers.attach_captured(events,
  captured_answers(captured_responses))` gives the events with the captured broker's answers attached, for an
  open-loop replay on either engine; the group's runtime maps the captured member ids, generations and member
  epochs to its own (state/runtime/captured_ids.py).
- `compare.compare_captured(tables, captured_responses)`: the divergence report, per request.
- `commands`: the `coordsim capture import` command and what `coordsim replay --compare-captured` calls.

docs/captures.md is the user's guide.
"""

from simulations.capture.compare import compare_captured, final_offsets, print_divergence_summary, write_divergences
from simulations.capture.importer import import_capture, write_import

__all__ = ["compare_captured", "final_offsets", "import_capture", "print_divergence_summary", "write_divergences",
           "write_import"]
