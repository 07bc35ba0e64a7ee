#!/usr/bin/env python3
"""Writes the captured-log fixtures of this directory (see README.md). Run from this directory; the output is
committed, so the tests do not need Python.

The log text follows nccl-tests' printf formats (src/util.cu, as summarised in ../nccl_tests_samples.txt), the
launcher prefixes follow Open MPI's --tag-output ("[jobid,rank]<stream>:"), and Slurm's srun --label ("task: ")
documentation; NCCL_DEBUG=INFO lines have NCCL's "host:pid:tid [dev] NCCL INFO ..." shape. The timings are
SYNTHETIC: t(S) = alpha + S * busfactor / busbw, rounded as nccl-tests rounds, with the alpha and busbw named in
each file's first comment line. They are test inputs, not measurements."""


def fmt_float(v, width):
    # nccl-tests getFloatStr: %.2f, then %.1f, then %.0f, then %.1e, the first that fits the width.
    for f in ("%.2f", "%.1f", "%.0f"):
        s = f % v
        if len(s) <= width:
            return s
    return "%.1e" % v


def rows(coll, nranks, alpha_us, busbw_gbps, sizes, redop="sum"):
    factor = {"all_reduce": 2 * (nranks - 1) / nranks, "all_gather": (nranks - 1) / nranks}[coll]
    out = []
    for s in sizes:
        t = alpha_us + s * factor / (busbw_gbps * 1e3)  # us
        algbw = s / (t * 1e3)
        bus = algbw * factor
        half = "  %7s  %6s  %6s  %6g" % (fmt_float(t, 7), fmt_float(algbw, 6), fmt_float(bus, 6), 0)
        out.append("%12li  %12li  %8s  %6s  %6s" % (s, s // 4, "float", redop if coll == "all_reduce" else "none", -1) +
                   half + half)
    return out


def header(binary, ranks, min_b, max_b):
    """ranks: list of (host, device index, bus id, name)."""
    h = ["# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703",
         "# Collective test starting: %s" % binary,
         "# nThread 1 nGpus 1 minBytes %d maxBytes %d step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
         "validation: 1 graph: 0" % (min_b, max_b),
         "#",
         "# Using devices"]
    for r, (host, dev, bus, name) in enumerate(ranks):
        h.append("#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s" % (r, 4000 + r, host, dev, bus, name))
    h += ["#",
          "#                                                              out-of-place                       in-place",
          "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
          "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"]
    return h


def footer(binary):
    return ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 20.0", "#",
            "# Collective test concluded: %s" % binary]


SIZES = [1 << k for k in range(10, 31, 2)]  # 1 KiB .. 1 GiB
H100 = "NVIDIA H100 80GB HBM3"


def info(host, pid, dev, text):
    return "%s:%d:%d [%d] NCCL INFO %s" % (host, pid, pid + 7, dev, text)


def tagged():
    """mpirun --tag-output, 2 hosts x 1 H100, all_reduce over InfiniBand; NCCL_DEBUG=INFO from both ranks
    interleaved; CRLF line ends (a log saved on Windows)."""
    ranks = [("node-a", 0, "0000:19:00", H100), ("node-b", 0, "0000:19:00", H100)]
    lines = ["# synthetic: alpha 24 us, busbw 42 GB/s (2 ranks, one per node, 400 Gb/s NIC)"]
    lines.append("[1,1]<stdout>:" + info("node-b", 5101, 0, "NCCL version 2.27.3+cuda12.9"))
    lines.append("[1,0]<stdout>:" + info("node-a", 4000, 0, "Bootstrap : Using ib0:10.0.0.1<0>"))
    body = header("all_reduce_perf", ranks, 1024, 1 << 30) + rows("all_reduce", 2, 24, 42, SIZES) + \
        footer("all_reduce_perf")
    for i, l in enumerate(body):
        lines.append("[1,0]<stdout>:" + l)
        if i % 5 == 2:
            lines.append("[1,1]<stdout>:" + info("node-b", 5101, 0, "Channel %02d/0 : 1[0] -> 0[0] [receive] via "
                                                 "NET/IB/0/GDRDMA" % i))
        if i == 8:
            lines.append("[1,0]<stderr>:" + info("node-a", 4000, 0, "NET/IB : Using [0]mlx5_0:1/IB"))
    return "\r\n".join(lines) + "\r\n"


def srun_label():
    """srun --label, 2 tasks on 2 hosts: an all_reduce run, then an all_gather run in the same file."""
    ranks = [("node-a", 0, "0000:19:00", H100), ("node-b", 0, "0000:19:00", H100)]
    lines = ["# synthetic: alpha 22 us, busbw 44 GB/s (all_reduce), alpha 20 us, busbw 40 GB/s (all_gather)"]
    lines.append("1: " + info("node-b", 5101, 0, "NCCL version 2.27.3+cuda12.9"))
    for binary, coll, a, bw in (("all_reduce_perf", "all_reduce", 22, 44), ("all_gather_perf", "all_gather", 20, 40)):
        body = header(binary, ranks, 1024, 1 << 30) + rows(coll, 2, a, bw, SIZES) + footer(binary)
        for i, l in enumerate(body):
            lines.append("0: " + l)
            if i % 7 == 3:
                lines.append("1: " + info("node-b", 5101, 0, "comm 0x5612 rank 1 nranks 2 cudaDev 0 busId 19000"))
    return "\n".join(lines) + "\n"


def mixed_gpus():
    """Two runs in one file, one on H100 nodes and one on A100 nodes: one fit must measure one GPU."""
    lines = ["# synthetic: alpha 24 us, busbw 42 GB/s"]
    for name in (H100, "NVIDIA A100-SXM4-80GB"):
        ranks = [("node-a", 0, "0000:19:00", name), ("node-b", 0, "0000:19:00", name)]
        lines += header("all_reduce_perf", ranks, 1024, 1 << 30) + rows("all_reduce", 2, 24, 42, SIZES) + \
            footer("all_reduce_perf")
    return "\n".join(lines) + "\n"


def independent_ranks():
    """nccl-tests built without MPI=1 and started by mpirun -np 2 --tag-output: each process runs its own
    one-rank test, their lines interleaved."""
    lines = []
    bodies = []
    for r, host in enumerate(("node-a", "node-b")):
        body = header("all_reduce_perf", [(host, 0, "0000:19:00", H100)], 1024, 1 << 20) + \
            rows("all_reduce", 2, 5, 100, SIZES[:6]) + footer("all_reduce_perf")
        bodies.append(["[1,%d]<stdout>:" % r + l for l in body])
    for a, b in zip(*bodies):
        lines += [a, b]
    return "\n".join(lines) + "\n"


for name, text in (("tagged_crlf.log", tagged()), ("srun_label.log", srun_label()), ("mixed_gpus.log", mixed_gpus()),
                   ("independent_ranks.log", independent_ranks())):
    with open(name, "w", newline="") as f:
        f.write(text)
