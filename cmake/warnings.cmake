# Compiler flags shared by every target (STYLE.md section 12).
set(RD_WARNINGS
    -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wformat=2 -Wundef -Wcast-align -Wnull-dereference -Wvla)
if(RD_WERROR)
    list(APPEND RD_WARNINGS -Werror)
endif()

# Determinism: no fused multiply-add contraction, no fast-math (STYLE.md section 8).
add_compile_options(-ffp-contract=off)

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

# rd_target_setup(target [SIM]): apply the project warning set; SIM adds the
# float-purity warning used by the simulator.
function(rd_target_setup target)
    cmake_parse_arguments(ARG "SIM" "" "" ${ARGN})
    target_compile_options(${target} PRIVATE ${RD_WARNINGS})
    if(ARG_SIM)
        target_compile_options(${target} PRIVATE -Wdouble-promotion)
    endif()
endfunction()
