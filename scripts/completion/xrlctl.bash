# bash completion for xrlctl(8)                               -*- shell-script -*-
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Install as $(PREFIX)/share/bash-completion/completions/xrlctl, or source it.
# Works with or without the bash-completion package.

# Interface names, from /sys/class/net.
_xrlctl_ifaces()
{
	local d names=()

	for d in /sys/class/net/*; do
		[[ -e $d ]] && names+=("${d##*/}")
	done
	printf '%s\n' "${names[@]}"
}

# Rule names of the running policy, asked of xrld (quietly; nothing if it is
# down or we may not talk to it). $1: the xrlctl being completed, $2: its
# --socket argument, if any.
_xrlctl_rules()
{
	local sock=$2 out
	local -a cmd=("${1:-xrlctl}")

	[[ -n $sock ]] && cmd+=(--socket "$sock")
	if command -v timeout >/dev/null 2>&1; then
		out=$(timeout 2 "${cmd[@]}" policy show 2>/dev/null) || return 0
	else
		out=$("${cmd[@]}" policy show 2>/dev/null) || return 0
	fi
	# "rules: N" is followed by one "  NAME: ..." line per rule
	awk '/^rules:/ { in_rules = 1; next }
	     in_rules && /^  [A-Za-z0-9._-]+: / { sub(/^  /, ""); sub(/:.*/, ""); print; next }
	     in_rules { exit }' <<<"$out"
}

# Set COMPREPLY to the words of $1 that start with the current word.
_xrlctl_words()
{
	mapfile -t COMPREPLY < <(compgen -W "$1" -- "$cur")
}

_xrlctl_files()
{
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}

_xrlctl_dirs()
{
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen -d -- "$cur")
}

_xrlctl()
{
	local cur prev i w verb="" vi=0 sock="" json=""
	local verbs="status attach detach policy stats top allow deny shadow override penalty cookies vouch"
	local globals="--socket --pin-dir --json --help"
	local -a args=()

	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=""
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	# "--socket=PATH" arrives as three words: --socket, =, PATH
	if [[ $cur == = ]]; then
		prev=${COMP_WORDS[COMP_CWORD - 1]}
		cur=""
	elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi

	# Find the verb: the first word that is not a global option or the
	# argument of one. Global options come before the verb (--json may
	# also come after it).
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		--socket | -s | --pin-dir | -p)
			[[ ${COMP_WORDS[i + 1]} == = ]] && ((i++))
			((i + 1 < COMP_CWORD)) && [[ $w == --socket || $w == -s ]] &&
				sock=${COMP_WORDS[i + 1]}
			((i++))
			;;
		-*) ;;
		*)
			verb=$w
			vi=$i
			break
			;;
		esac
	done

	if [[ -z $verb ]]; then
		case $prev in
		--socket | -s) _xrlctl_files; return 0 ;;
		--pin-dir | -p) _xrlctl_dirs; return 0 ;;
		esac
		if [[ $cur == -* ]]; then
			_xrlctl_words "$globals"
		else
			_xrlctl_words "$verbs"
		fi
		return 0
	fi

	# The words after the verb, up to the current one, without --json.
	for ((i = vi + 1; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} == --json ]]; then
			json=1
		else
			args+=("${COMP_WORDS[i]}")
		fi
	done
	for ((i = 1; i < vi; i++)); do
		[[ ${COMP_WORDS[i]} == --json || ${COMP_WORDS[i]} == -j ]] && json=1
	done
	# --json is offered on the read verbs until it has been given
	local j="--json"
	[[ -n $json ]] && j=""

	case $verb in
	status)
		_xrlctl_words "$j"
		;;
	attach)
		case $prev in
		--mode) _xrlctl_words "native skb auto"; return 0 ;;
		esac
		if ((${#args[@]} == 0)); then
			_xrlctl_words "$(_xrlctl_ifaces)"
		elif ((${#args[@]} == 1)); then
			_xrlctl_words "--mode"
		fi
		;;
	detach)
		((${#args[@]} == 0)) && _xrlctl_words "$(_xrlctl_ifaces)"
		;;
	policy)
		if ((${#args[@]} == 0)); then
			_xrlctl_words "check apply show"
		elif ((${#args[@]} == 1)); then
			case ${args[0]} in
			check | apply) _xrlctl_files ;;
			show) _xrlctl_words "$j" ;;
			esac
		fi
		;;
	stats)
		case $prev in
		--iface) _xrlctl_words "$(_xrlctl_ifaces)"; return 0 ;;
		--watch) _xrlctl_words "1 2 5 10"; return 0 ;;
		esac
		local opts="" o
		for o in --iface --watch; do
			[[ " ${args[*]} " == *" $o "* ]] || opts+=" $o"
		done
		_xrlctl_words "$opts $j"
		;;
	top)
		case $prev in
		--rule) _xrlctl_words "$(_xrlctl_rules "${COMP_WORDS[0]}" "$sock")"; return 0 ;;
		--http) _xrlctl_words "$(_xrlctl_rules "${COMP_WORDS[0]}" "$sock")"; return 0 ;;
		-n) _xrlctl_words "10 20 50 100"; return 0 ;;
		--watch) _xrlctl_words "1 2 5 10"; return 0 ;;
		esac
		local opts="" o
		for o in --rule -n --watch --http; do
			[[ " ${args[*]} " == *" $o "* ]] || opts+=" $o"
		done
		_xrlctl_words "$opts $j"
		;;
	allow | deny | vouch)
		if ((${#args[@]} == 0)); then
			_xrlctl_words "add del list"
		elif [[ ${args[0]} == list ]]; then
			((${#args[@]} == 1)) && _xrlctl_words "$j"
		elif [[ $verb != allow && ${args[0]} == add ]] && ((${#args[@]} >= 2)); then
			case $prev in
			--ttl) _xrlctl_words "30s 5m 10m 30m 1h 6h 1d" ;;
			*) ((${#args[@]} == 2)) && _xrlctl_words "--ttl" ;;
			esac
		fi
		;;
	shadow | cookies)
		# a rule, then its mode
		if ((${#args[@]} == 0)); then
			_xrlctl_words "$(_xrlctl_rules "${COMP_WORDS[0]}" "$sock")"
		elif ((${#args[@]} == 1)) && [[ $verb == shadow ]]; then
			_xrlctl_words "on off"
		elif ((${#args[@]} == 1)); then
			_xrlctl_words "on auto off"
		fi
		;;
	penalty)
		if ((${#args[@]} == 0)); then
			_xrlctl_words "list del"
		elif [[ ${args[0]} == list ]]; then
			((${#args[@]} == 1)) && _xrlctl_words "$j"
		fi
		;;
	override)
		case $prev in
		--ttl) _xrlctl_words "10m 1h 6h 1d 7d"; return 0 ;;
		--rate | --burst) return 0 ;;
		esac
		if ((${#args[@]} == 0)); then
			_xrlctl_words "list del $(_xrlctl_rules "${COMP_WORDS[0]}" "$sock")"
		elif [[ ${args[0]} == list ]]; then
			((${#args[@]} == 1)) && _xrlctl_words "$j"
		elif [[ ${args[0]} != del ]] && ((${#args[@]} >= 2)); then
			local opts="" o
			for o in --rate --burst --ttl; do
				[[ " ${args[*]} " == *" $o "* ]] || opts+=" $o"
			done
			_xrlctl_words "$opts"
		fi
		;;
	esac
	return 0
}

complete -F _xrlctl xrlctl
