#!/usr/bin/env bash
# The H200 truth for torch.compile capture (issue 37): the transformer block's training step
# (examples/compile/block.py) run for real, default mode and max-autotune (with Inductor's
# epilogue benchmark off, as under capture, and with its defaults), every compile and every
# rejected max-autotune choice recorded by scripts/inductor_truth.py, Inductor's own autotune log
# beside each; and flex attention's forward with head_dim 512 (NeMo Automodel #3064's H100 case).
#     bash scripts/h200_inductor_block.sh OUT_DIR [RUN ...]
# block-max-autotune-first keeps, in each selection, the choice the capture keeps (the first Triton
# choice that fits; scripts/inductor_truth.py's TILEFIT_TRUTH_PICK), so that the kernels after it
# are the capture's too and every kernel can be compared.
# With RUN names (block-default, block-max-autotune, block-max-autotune-first,
# block-max-autotune-epilogue, flex-hd512) it
# runs those alone, so that the runs can be split over calls of a limited length.
set -u
out="$1"
shift
runs=" ${*:-block-default block-max-autotune block-max-autotune-first block-max-autotune-epilogue flex-hd512} "
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$out/gpu.csv" 2>&1
truth() {
    local name="$1"
    shift
    [[ "$runs" == *" $name "* ]] || return 0
    /usr/bin/time -f "%e s" python3 scripts/inductor_truth.py "$out/$name.json" "$@" \
        > "$out/$name.log" 2>&1
    echo "$name: exit $? $(tail -1 "$out/$name.log")"
}
truth block-default examples/compile/block.py default
TORCHINDUCTOR_BENCHMARK_EPILOGUE_FUSION=0 \
    truth block-max-autotune examples/compile/block.py max-autotune-no-cudagraphs
TORCHINDUCTOR_BENCHMARK_EPILOGUE_FUSION=0 TILEFIT_TRUTH_PICK=first-fitting \
    truth block-max-autotune-first examples/compile/block.py max-autotune-no-cudagraphs
truth block-max-autotune-epilogue examples/compile/block.py max-autotune-no-cudagraphs
truth flex-hd512 crates/tilefit/tests/fixtures/capture/compiled.py 512
