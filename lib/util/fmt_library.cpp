// fmt's out-of-line functions, compiled from Debian's fmt headers.
//
// Debian's libfmt-dev has no static library, and linking libfmt.so would also
// pull in libstdc++.so, which BEKC_STATIC keeps out (see CMakeLists.txt).
// format-inl.h defines the non-template functions; the explicit
// instantiations below are the templates format.h declares `extern` or that
// bekc's code reaches through them.
#include <fmt/format-inl.h>

#include <locale>

template fmt::detail::locale_ref::locale_ref(const std::locale&);
template std::locale fmt::detail::locale_ref::get<std::locale>() const;
template auto fmt::detail::thousands_sep_impl<char>(locale_ref)
    -> fmt::detail::thousands_sep_result<char>;
template auto fmt::detail::thousands_sep_impl<wchar_t>(locale_ref)
    -> fmt::detail::thousands_sep_result<wchar_t>;
template auto fmt::detail::decimal_point_impl(locale_ref) -> char;
template auto fmt::detail::decimal_point_impl(locale_ref) -> wchar_t;
