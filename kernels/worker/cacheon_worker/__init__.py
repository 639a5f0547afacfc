"""The verify worker harness.

A worker is one freshly spawned Python process with one role:

- plan: list the cases of the slots a bundle implements (validator code only);
- candidate: import one op row's module by file path and run its entry on
  validator-generated inputs and validator-allocated outputs, recording
  what it observed and the raw outputs;
- reference: regenerate the same inputs, compute the fp32 truth and judge
  the candidate's outputs (never imports candidate code).

The controller (cacheon verify) spawns every worker, feeds it a JSON request
on stdin, enforces a timeout on its whole process group and reads the
result file afterwards. See docs/reference/worker-protocol.md.
"""
