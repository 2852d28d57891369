#!/usr/bin/env bash
# ctest install_links_with_pkg_config: installs this build into a temporary
# prefix and builds examples/attention_basics.c there with the README's own
# compile line (read from README.md, so the README cannot drift), then runs it;
# and runs the installed program.
# Usage: test_install.sh CMAKE BUILD_DIR SOURCE_DIR LIBDIR SANITIZE
set -euo pipefail
cmake=$1 build=$2 src=$3 libdir=$4 sanitize=$5
if [ "$sanitize" = ON ]; then
  echo "skipped: a sanitizer build's archives need -fsanitize when linking; the README's line is for a normal build"
  exit 77
fi
command -v pkg-config >/dev/null || { echo "skipped: pkg-config is not installed"; exit 77; }

line=$(sed -n 's/^    \(cc examples\/attention_basics\.c .*\)$/\1/p' "$src/README.md")
[ "$(printf '%s\n' "$line" | grep -c .)" = 1 ] ||
  { echo "README.md should hold one indented 'cc examples/attention_basics.c ...' line, found: '$line'"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; exit 1; }
# The installed program runs (scripts/demo.sh puts it on the PATH this way).
version=$("$prefix/bin/tinyseq" --version) || { echo "$prefix/bin/tinyseq --version failed: $version"; exit 1; }
grep -q '^tinyseq [0-9]' <<<"$version" || { echo "unexpected $prefix/bin/tinyseq --version: $version"; exit 1; }
"$prefix/bin/tinyseq" corpus --toy --n 3 --seed 1 | grep -q . || { echo "$prefix/bin/tinyseq corpus --toy printed nothing"; exit 1; }
echo "ok: $prefix/bin/tinyseq runs: ${version%%$'\n'*}"
mkdir "$work/examples"
cp "$src/examples/attention_basics.c" "$work/examples/"
cd "$work"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
echo "PKG_CONFIG_PATH=$PKG_CONFIG_PATH"
echo "\$ $line"
eval "$line"
out=$(./attention_basics)
# The full-precision line of docs/attention.md, from the installed library.
grep -q '^c to full precision: 3\.88079707797788' <<<"$out" ||
  { echo "unexpected output of ./attention_basics:"; echo "$out"; exit 1; }
# The program came from the prefix's archives, not from the build tree.
libs=$(pkg-config --libs tinyseq)
first_l=$(printf '%s\n' $libs | sed -n 's/^-L//p' | head -1)
[ -n "$first_l" ] && [ "$(realpath "$first_l")" = "$(realpath "$prefix/$libdir")" ] ||
  { echo "pkg-config --libs tinyseq does not point into $prefix/$libdir: $libs"; exit 1; }
# With SentencePiece, libtinyseq_data holds C++ (data/subword.cc): a C program
# that uses it links with the same line only if the .pc names the C++ runtime.
if grep -q -- '-lsentencepiece' <<<"$libs"; then
  cat >examples/subword_link.c <<'C'
#include <data/subword.h>
#include <stdio.h>
int main(void) {
    const char *s[] = {"le chat mange .", "la souris dort ."};
    ts_subword *sw;
    if (ts_subword_train(s, 2, &(ts_subword_opts){.vocab_size = 300}, &sw)) return 1;
    printf("%zu pieces\n", ts_subword_size(sw));
    ts_subword_free(sw);
    return 0;
}
C
  eval "${line//attention_basics/subword_link}"
  ./subword_link | grep -q ' pieces$' || { echo "./subword_link did not train a subword model"; exit 1; }
  echo "ok: a C program using data/subword.h links with the same line"
fi
echo "ok: installed into $prefix, built and ran examples/attention_basics.c with the README's line"
