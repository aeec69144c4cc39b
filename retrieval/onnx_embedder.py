"""The embedding model on ONNX Runtime: the default embedder.

Same weights, tokenizer and pooling as the torch embedder (the graph comes
from onnx_export.py), about three times faster here and without torch in the
process: a daemon with a warm cache imports onnxruntime and tokenizers only
(~0.3 s instead of 5-7 s for sentence_transformers). Tokenisation uses the
tokenizer.json the model package ships, through the `tokenizers` library,
with sentence-transformers' settings: truncation at the model's
max_seq_length (256 word pieces for MiniLM; the file itself says 128).
Padding is done here, per ONNX run, to the longest text of that run; the
graph's mean pooling counts only positions the attention mask marks, so a
text's vector does not depend on what it was batched with
(tests/test_embedder_onnx.py compares batched and one-at-a-time vectors).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from .embeddings import Embedder
from .onnx_export import OUTPUT, ModelSpec

# Texts per ONNX run when indexing. A batch is sorted by token count first,
# so each run pads little: on the synthetic benchmark corpus padding adds 2%
# to the tokens at 16 rows and 4% at 32 (11% and 13% sorted by characters),
# on the evaluation corpus 10% at 32 (36% by characters). Smaller runs also
# stay in cache: taking turns on the same 512 synthetic records (2 busy
# cores, load 16), 8 rows made 11.8 records per CPU second, 16 rows 11.1,
# 32 rows 9.3, 64 rows 8.6.
SUB_BATCH = 16
# Above this many texts a call counts as a batch and gets every core.
BATCH_MIN = 8


class OnnxEmbedder(Embedder):
    def __init__(self, spec: ModelSpec, onnx_file: Path, name: str, threads: int):
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import onnxruntime
        from tokenizers import Tokenizer

        self._ort: Any = onnxruntime
        self._file = onnx_file
        self.name = name
        self._lower = spec.do_lower_case
        tokenizer = Tokenizer.from_file(str(spec.path / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=spec.max_seq_length, strategy="longest_first")
        # The model's own pad token (tokenizer.json's padding: BERT's [PAD] = 0,
        # MPNet's <pad> = 1), as sentence-transformers pads: MPNet numbers its
        # positions by skipping that id, so the graph sees what torch's does.
        # Read before no_padding(), which forgets it.
        padding = tokenizer.padding or {}
        pad_token = str(padding.get("pad_token") or "[PAD]")
        pad_id = padding.get("pad_id", tokenizer.token_to_id(pad_token))
        self._pad_id = int(pad_id or 0)
        tokenizer.no_padding()  # padded per ONNX run by _feed()
        self._tokenizer = tokenizer
        # One thread for single queries by default (VETTED_EMBED_THREADS; the
        # reasons are in settings.py), every core for batches. ONNX Runtime
        # fixes the thread count per session, so a batch session is made on
        # the first batch only: a daemon that never indexes in bulk never
        # holds the second copy of the weights (~90 MB).
        cores = os.cpu_count() or 1
        self._query_threads = threads or cores
        self._batch_threads = max(self._query_threads, cores)
        self._query = self._session(self._query_threads)
        self._batch: Any = self._query if self._batch_threads == self._query_threads else None
        self._lock = threading.Lock()
        self._inputs = {i.name for i in self._query.get_inputs()}
        self.dimension = int(self._run(self._query, ["warm up"]).shape[1])

    def _session(self, threads: int) -> Any:
        options = self._ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Spinning worker threads burn the other core while waiting: on a
        # shared 2-core machine that slowed everyone, this process included.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only; never chatter on stderr
        return self._ort.InferenceSession(str(self._file), options, providers=["CPUExecutionProvider"])

    def _encode(self, texts: list[str]) -> list[Any]:
        return list(self._tokenizer.encode_batch([t.lower() if self._lower else t for t in texts]))

    def _feed(self, encoded: list[Any]) -> dict[str, np.ndarray]:
        """The graph's inputs for these encodings, padded to the longest of them."""
        width = max(len(e.ids) for e in encoded)
        ids = np.full((len(encoded), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encoded), width), dtype=np.int64)
        types = np.zeros((len(encoded), width), dtype=np.int64)
        for row, e in enumerate(encoded):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = e.attention_mask
            types[row, : len(e.ids)] = e.type_ids
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = types
        return feed

    def _run(self, session: Any, texts: list[str]) -> np.ndarray:
        return self._run_encoded(session, self._encode(texts))

    def _run_encoded(self, session: Any, encoded: list[Any]) -> np.ndarray:
        output: np.ndarray = session.run([OUTPUT], self._feed(encoded))[0]
        return output

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # InferenceSession.run is thread-safe: concurrent queries run side by side.
        if len(texts) <= BATCH_MIN:
            return np.asarray(self._run(self._query, texts), dtype=np.float32)
        if self._batch is None:
            with self._lock:
                if self._batch is None:
                    self._batch = self._session(self._batch_threads)
        # Tokenised once, then longest first by token count (a stable sort:
        # the same texts always make the same runs), so each run pads little.
        encoded = self._encode(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(encoded[i].ids))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), SUB_BATCH):
            rows = order[start : start + SUB_BATCH]
            out[rows] = self._run_encoded(self._batch, [encoded[i] for i in rows])
        return out
