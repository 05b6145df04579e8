# Compiler flags shared by every target (STYLE.md section 12).
set(RD_WARNINGS
    -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wformat=2 -Wundef -Wcast-align -Wnull-dereference -Wvla)
if(RD_WERROR)
    list(APPEND RD_WARNINGS -Werror)
endif()

# Determinism: no fused multiply-add contraction, no fast-math (STYLE.md section 8;
# README, "Determinism"). RD_FP_FLAGS is the rule for every compiler and
# target; RD_FP_FMA_FLAGS_<compiler id> is added for a target with FMA
# instructions. tests/determinism builds the scene with the other compiler
# and for x86-64-v3 and -v4 with these too.
#
# GCC 12's vectoriser does not honour -ffp-contract=off everywhere: its SLP
# "addsub" pattern (tree-vect-slp-patterns.cc, addsub_pattern::recognize)
# turns lanes that alternate a*b-c and a*b+c (q_mul in server/sim/quat.h)
# into .VEC_FMADDSUB/.VEC_FMSUBADD, i.e. vfmaddsub/vfmsubadd, whenever the
# target has FMA (-march=haswell, x86-64-v3, x86-64-v4, native on a CPU with
# FMA); -O2 -march=x86-64-v3 changed the scene's hash. -mno-fma does not
# stop it under AVX-512 (AVX512F has the same instructions); the loop
# vectoriser uses the pattern too, so -fno-tree-slp-vectorize is not enough.
# With -fno-tree-vectorize gcc 12 forms no FMA in our sources (the scalar
# contraction honours the flag); tests/determinism checks the objects. It
# costs 8-10 % in ragdoll-bench --piles-only, so it is added only for a
# target that has FMA (a target without cannot fuse, vectorised or not):
# the default x86-64 build's code does not change.
# Later GCC sources check the flag in that pattern; only gcc 12 was tried.
# Clang 14 honours -ffp-contract=off in its vectorisers.
set(RD_FP_FLAGS -ffp-contract=off)
set(RD_FP_FMA_FLAGS_GNU -fno-tree-vectorize)
set(RD_FP_FMA_FLAGS_Clang "")
add_compile_options(${RD_FP_FLAGS})
if(RD_FP_FMA_FLAGS_${CMAKE_C_COMPILER_ID})
    # The build's target: CMAKE_C_FLAGS and the build type's (-march=native, ...).
    # A -march added to one target needs RD_FP_FMA_FLAGS_<id> there too.
    include(CheckCSourceCompiles)
    string(TOUPPER "${CMAKE_BUILD_TYPE}" rd_config)
    set(CMAKE_REQUIRED_FLAGS "${CMAKE_C_FLAGS_${rd_config}}")
    set(CMAKE_REQUIRED_QUIET ON)
    unset(RD_TARGET_HAS_FMA CACHE) # the flags may have changed since the last run
    check_c_source_compiles([[
#if !defined(__FP_FAST_FMAF) && !defined(__FMA__) && !defined(__FMA4__) && !defined(__AVX512F__)
#error no fused multiply-add on this target
#endif
int main(void) { return 0; }
]] RD_TARGET_HAS_FMA)
    unset(CMAKE_REQUIRED_FLAGS)
    unset(CMAKE_REQUIRED_QUIET)
    if(RD_TARGET_HAS_FMA)
        add_compile_options(${RD_FP_FMA_FLAGS_${CMAKE_C_COMPILER_ID}})
        message(STATUS "Determinism: the target has FMA, so also "
                       "${RD_FP_FMA_FLAGS_${CMAKE_C_COMPILER_ID}}")
    else()
        message(STATUS "Determinism: the target has no FMA")
    endif()
endif()

# RD_SANITIZE takes -fsanitize's list: address,undefined (scripts/test.sh's
# second build) or thread (its third: ThreadSanitizer, for the worker pool;
# RD_TSAN=ON is the same). ThreadSanitizer cannot be combined with
# AddressSanitizer or LeakSanitizer.
if(RD_TSAN AND NOT RD_SANITIZE MATCHES "thread")
    if(RD_SANITIZE)
        set(RD_SANITIZE "${RD_SANITIZE},thread")
    else()
        set(RD_SANITIZE "thread")
    endif()
endif()
if(RD_SANITIZE MATCHES "thread" AND RD_SANITIZE MATCHES "address|leak")
    message(FATAL_ERROR "RD_SANITIZE=${RD_SANITIZE}: ThreadSanitizer cannot be combined with "
                        "AddressSanitizer or LeakSanitizer; build them apart")
endif()
if(RD_SANITIZE)
    add_compile_options(-fsanitize=${RD_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
    add_link_options(-fsanitize=${RD_SANITIZE})
endif()
if(RD_FUZZ)
    if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
        message(FATAL_ERROR "RD_FUZZ needs clang (libFuzzer): configure with CC=clang")
    endif()
    # Every target is built for coverage-guided fuzzing, with ASan and UBSan;
    # only the targets of tests/fuzz link libFuzzer itself (and its main).
    add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                        -fno-omit-frame-pointer)
    add_link_options(-fsanitize=address,undefined)
endif()
if(RD_VALIDATE)
    add_compile_definitions(RD_VALIDATE=1)
endif()
# The portable lanes everywhere (the same results as SSE2, bit for bit;
# tests/unit builds the simulator both ways and compares).
if(RD_SIM_NO_SIMD)
    add_compile_definitions(RD_SIM_NO_SIMD=1)
endif()

# rd_target_setup(target [SIM]): apply the project warning set; SIM adds the
# float-purity warning used by the simulator.
function(rd_target_setup target)
    cmake_parse_arguments(ARG "SIM" "" "" ${ARGN})
    target_compile_options(${target} PRIVATE ${RD_WARNINGS})
    if(ARG_SIM)
        target_compile_options(${target} PRIVATE -Wdouble-promotion)
    endif()
endfunction()
