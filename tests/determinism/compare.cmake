# cmake -DA=prog [-DB=prog | -DEXPECT=hash] -DASSETS=dir -P compare.cmake
# Runs A (and B) on ASSETS and fails unless the printed hashes agree.
execute_process(COMMAND ${A} ${ASSETS} OUTPUT_VARIABLE HA RESULT_VARIABLE RA
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT RA EQUAL 0 OR HA STREQUAL "")
    message(FATAL_ERROR "${A} failed (${RA})")
endif()
if(DEFINED B)
    execute_process(COMMAND ${B} ${ASSETS} OUTPUT_VARIABLE HB RESULT_VARIABLE RB
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT RB EQUAL 0 OR NOT HA STREQUAL HB)
        message(FATAL_ERROR "optimised ${HA} != -O0 ${HB}")
    endif()
    message(STATUS "optimised and -O0 both hash ${HA}")
else()
    if(NOT HA STREQUAL EXPECT)
        message(FATAL_ERROR "scene hash ${HA}, pinned ${EXPECT}")
    endif()
    message(STATUS "scene hash ${HA} as pinned")
endif()
