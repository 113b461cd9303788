"""tests/trust/hostile.sh's PyTorch side: the forged checkpoints of make_inputs.py given to grassflow.torch.load,
which must refuse each as the C loader does (a ValueError whose message matches the case's regex). The
address space is capped at what the process holds after importing torch plus MIB MiB (the loader must not
allocate what a forged config claims).

  torch_load.py cases MIB CASES.tsv DIR  per checkpoint case whose file is one of DIR's (score, generate or
                                         eval --ckpt FILE): name, the exception's type (OK if none) and its
                                         message, tab-separated
  torch_load.py one MIB FILE             the same for FILE (without a name), then the peak RSS in MiB
"""
import os
import re
import resource
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))

import grassflow.torch as gt  # noqa: E402


def attempt(path):
    try:
        gt.load(path)
        return "OK", ""
    except Exception as e:  # noqa: BLE001 (the type is the result)
        return type(e).__name__, str(e).replace("\n", " ").replace("\t", " ")


def cap(mib):
    with open("/proc/self/status") as f:
        vm = int(re.search(r"VmSize:\s+(\d+) kB", f.read()).group(1)) * 1024
    limit = vm + mib * 2 ** 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv):
    cap(int(argv[1]))
    if argv[0] == "one":
        kind, msg = attempt(argv[2])
        print("%s\t%s\t%d" % (kind, msg, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024))
        return
    with open(argv[2]) as f:
        for line in f:
            name, _, args, _ = line.rstrip("\n").split("\t")
            m = re.match(r"(score|generate|eval) --ckpt (\S+)", args)
            if m and os.path.dirname(os.path.abspath(m.group(2))) == os.path.abspath(argv[3]):
                print("%s\t%s\t%s" % ((name,) + attempt(m.group(2))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
