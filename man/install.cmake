# Installs the man pages that tools/gen/gen_cli_docs.py wrote (RS_PAGES), with
# the reference pages named where this install puts them. The pages are
# generated at build time with the configured CMAKE_INSTALL_FULL_DOCDIR
# (RS_BUILT_DOCDIR); `cmake --install BUILD --prefix P` installs under P,
# so each page's copy of that path becomes P's doc directory here, when the
# prefix is known. Run by CMakeLists.txt's install(SCRIPT), after
# install(CODE) has set RS_PAGES, RS_BUILT_DOCDIR, RS_DOCDIR, RS_MANDIR
# (CMAKE_INSTALL_DOCDIR and _MANDIR, relative to the prefix unless
# absolute) and RS_STAGE (a build directory for the edited copies).

# as tools/gen/gen_cli_docs.py's roff_path writes a path: \ and - escaped, a
# break point (\:) after each /
function(rs_roff_path out path)
  string(REPLACE "\\" "\\e" path "${path}")
  string(REPLACE "-" "\\-" path "${path}")
  string(REPLACE "/" "/\\:" path "${path}")
  set(${out} "${path}" PARENT_SCOPE)
endfunction()

foreach(var docdir mandir)
  string(TOUPPER "RS_${var}" from)
  set(${var} "${${from}}")
  if(NOT IS_ABSOLUTE "${${var}}")
    set(${var} "${CMAKE_INSTALL_PREFIX}/${${var}}")
  endif()
endforeach()
rs_roff_path(built "${RS_BUILT_DOCDIR}/")
rs_roff_path(now "${docdir}/")
file(MAKE_DIRECTORY "${RS_STAGE}")
set(staged "")
foreach(page IN LISTS RS_PAGES)
  file(READ "${page}" text)
  string(REPLACE "${built}" "${now}" text "${text}")
  get_filename_component(name "${page}" NAME)
  file(WRITE "${RS_STAGE}/${name}" "${text}")
  list(APPEND staged "${RS_STAGE}/${name}")
endforeach()
file(INSTALL DESTINATION "${mandir}/man1" TYPE FILE FILES ${staged})
