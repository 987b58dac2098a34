# Builds the dashboard and embeds it: `npm run build` in web/ (writing web/dist), then
# embed_assets.py. Run by the custom command in src/web/CMakeLists.txt as
#   cmake -DWEB_DIR=... -DNPM=... -DPYTHON=... -DEMBED=... -DOUTPUT=... -P build_web.cmake
foreach(var WEB_DIR NPM PYTHON EMBED OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "build_web.cmake: ${var} is not set")
  endif()
endforeach()

if(NOT IS_DIRECTORY "${WEB_DIR}/node_modules")
  message(FATAL_ERROR
    "The web dashboard's npm packages are not installed (no ${WEB_DIR}/node_modules).\n"
    "Run `make deps` (or scripts/install-deps.sh, which runs `npm ci` in web/), then build again.\n"
    "To build without the dashboard, configure with -DTRAINWATCH_WEB=OFF (a placeholder page is embedded).")
endif()

message(STATUS "web: npm run build in ${WEB_DIR}")
execute_process(COMMAND "${NPM}" run build WORKING_DIRECTORY "${WEB_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR
    "`npm run build` failed in ${WEB_DIR} (${rc}); see its output above.\n"
    "If web/package-lock.json changed, reinstall the packages: rm -rf web/node_modules && make deps.\n"
    "To build without the dashboard, configure with -DTRAINWATCH_WEB=OFF.")
endif()

execute_process(COMMAND "${PYTHON}" "${EMBED}" --input "${WEB_DIR}/dist" --output "${OUTPUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "embedding ${WEB_DIR}/dist failed (${rc})")
endif()
