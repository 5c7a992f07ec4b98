# bash completion for tprofctl. Commands, options and option values are
# read from `tprofctl [CMD...] --help` at each TAB, so they follow the
# command-line parser: commands are the indented first words under a
# "...commands:" heading, options the -x / --long-name tokens of the help,
# values the A|B|C lists written after an option ("--format text|json").

# The commands `tprofctl ARGS... --help` lists: under a "...commands:"
# heading, or in its synopsis (the lines up to the first blank one) as
# "tprofctl ARGS... WORD" or "... [WORD]".
_tprofctl_subcommands() {
	local synopsis="${*:2}"
	"$@" --help 2>&1 | awk -v syn="${1##*/} $synopsis " '
		NR == 1 { s = 1 }
		s && /^[ \t]*$/ { s = 0 }
		s && (i = index($0, syn)) {
			w = substr($0, i + length(syn))
			if (match(w, /^\[?[a-z][a-z0-9-]*/)) { w = substr(w, 1, RLENGTH); sub(/^\[/, "", w); print w }
		}
		/^[^ \t].*:[ \t]*$/ { c = tolower($0) ~ /commands:[ \t]*$/; next }
		/^[ \t]*$/ { c = 0; next }
		c && /^[ \t]+[a-z][a-z0-9-]*([ \t]|$)/ { print $1 }' | sort -u
}

_tprofctl() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=
	[ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
	local prog=${COMP_WORDS[0]}
	type -P "$prog" >/dev/null 2>&1 || prog=tprofctl
	COMPREPLY=()

	# The command path (tprofctl pmu watch ...): words that the help of
	# the path so far lists as commands. After "--" comes a program to run.
	local -a path=("$prog")
	local i w subs
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [ "$w" = -- ]; then
			if [ $((i + 1)) -eq "$COMP_CWORD" ]; then
				mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
			else
				compopt -o filenames 2>/dev/null
				mapfile -t COMPREPLY < <(compgen -f -- "$cur")
			fi
			return 0
		fi
		[[ $w == -* ]] && continue
		subs=$(_tprofctl_subcommands "${path[@]}")
		if grep -qxF -- "$w" <<<"$subs"; then path+=("$w"); fi
	done

	local help
	help=$("${path[@]}" --help 2>&1)
	if [[ $cur == -* ]]; then
		local opts
		# Words of the help (split at blanks, quotes and , | / ( ) [ ] = :
		# .) that are -x or --long-name: not 3*ins-cyc or -top.
		local split=$'[][[:space:],|/()=:.`\'"]+'
		opts=$(sed -E "s#$split#\n#g" <<<"$help" |
			grep -xE -- '--[A-Za-z][A-Za-z0-9-]*|-[A-Za-z]' | sort -u)
		mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
		return 0
	fi
	case $prev in
	-o | --output | -i | --input)
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return 0
		;;
	-*)
		# The values the help lists for this option: "--format text|json"
		# (or "=text|json"), or CLI11's "--format TEXT:{text,json}".
		local values opt
		opt=$(sed 's/[][\.*^$+?(){}|/]/\\&/g' <<<"$prev")
		values=$({
			grep -oE -- "(^|[[:space:][])${opt}[ =][A-Za-z0-9_-]+(\|[A-Za-z0-9_-]+)+" <<<"$help" |
				sed -E "s/^[[:space:][]*${opt}[ =]//"
			grep -E -- "(^|[[:space:],])${opt}([[:space:],=]|$)" <<<"$help" |
				grep -oE '\{[A-Za-z0-9_-]+(,[A-Za-z0-9_-]+)+\}' | tr -d '{}' | tr ',' '|'
		} | tr '|' '\n' | sort -u)
		if [ -n "$values" ]; then
			mapfile -t COMPREPLY < <(compgen -W "$values" -- "$cur")
			return 0
		fi
		;;
	esac
	subs=$(_tprofctl_subcommands "${path[@]}")
	if [ -n "$subs" ] && [ "${#path[@]}" -eq "$COMP_CWORD" ]; then
		mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
		return 0
	fi
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}

complete -F _tprofctl tprofctl
