-- Functions for the price reads whose response text PostgreSQL writes
-- (server/prices/text-repository.ts). Each gives what JavaScript gives, so the
-- text is what the service would write from the numbers itself.

-- The IEEE 754 product of two doubles, as JavaScript computes it.
--
-- PostgreSQL's float8 `*` is that multiplication, except that it raises an
-- error where the product leaves the double range: above it (JavaScript:
-- ±Infinity) or so far below it that it rounds to zero (JavaScript: ±0). The
-- reads multiply with `*` whenever both magnitudes lie within 1e-150..1e150,
-- which covers every real price, volume and factor, and call this otherwise.
create function ieee_product(a double precision, b double precision) returns double precision
language plpgsql immutable strict parallel safe as $$
begin
  return a * b;
exception when numeric_value_out_of_range then
  -- Finite, nonzero operands whose product is out of range: its logarithm
  -- says above or below.
  return case when ln(abs(a)) + ln(abs(b)) > 0 then 'Infinity'::double precision else 0 end * sign(a) * sign(b);
end
$$;

-- A double as JSON.stringify writes it (ECMAScript Number::toString): the
-- fewest digits that read back as the same double, the closest of them to it
-- (ties to an even last digit), plain from 1e-6 up to 1e21 and with an
-- exponent outside; -0 is 0, and NaN and ±Infinity are null.
--
-- PostgreSQL's own output (extra_float_digits ≥ 1) gives the same digits
-- except for one case: a decimal lying exactly halfway between two doubles
-- reads back as the one with the even mantissa, and JavaScript counts it as
-- that double's text where PostgreSQL does not. Such halfway points are short
-- decimals only for integers from 2^54 (1.8e16) up, where JavaScript can write
-- one digit fewer (21739192660417850, PostgreSQL 2.1739192660417848e+16). The
-- reads call this only outside 1e-4..1e15, where PostgreSQL writes exponents.
create function json_number_text(x double precision) returns text
language plpgsql immutable strict parallel safe as $$
declare
  shortest text := abs(x)::text;
  mantissa text := split_part(shortest, 'e', 1);
  whole text := split_part(mantissa, '.', 1);
  digits text := whole || split_part(mantissa, '.', 2);
  -- |x| is 0.<digits> × 10^point.
  point integer := length(whole) + coalesce(nullif(split_part(shortest, 'e', 2), '')::integer, 0);
  bits text;
  exact numeric;
  unit numeric;
  floor_ numeric;
  found numeric;
  candidate numeric;
  k integer;
  n integer;
begin
  if x = 0 then
    return '0';
  elsif x = 'NaN'::double precision or abs(x) = 'Infinity'::double precision then
    return 'null';
  end if;
  while left(digits, 1) = '0' loop
    digits := substr(digits, 2);
    point := point - 1;
  end loop;
  digits := rtrim(digits, '0');

  if abs(x) >= 2 ^ 54 then
    -- An integer: its exact value from its bits, then the shortest decimals
    -- that read back as it, halfway points included.
    bits := encode(float8send(abs(x)), 'hex');
    exact := (('x' || lpad(substr(bits, 4), 16, '0'))::bit(64)::bigint + 2::numeric ^ 52)
      * 2::numeric ^ (('x' || substr(bits, 1, 3))::bit(12)::integer - 1075);
    for k in 1 .. length(digits) - 1 loop
      unit := 10::numeric ^ (point - k);
      floor_ := trunc(exact / unit) * unit;
      found := null;
      foreach candidate in array array[floor_, floor_ + unit] loop
        -- From 2^1024 - 2^970 up, a decimal rounds to Infinity (and the cast fails).
        if candidate < 2::numeric ^ 1024 - 2::numeric ^ 970 and candidate::double precision = abs(x)
          and (found is null or abs(candidate - exact) < abs(found - exact)
            or abs(candidate - exact) = abs(found - exact) and trunc(candidate / unit) % 2 = 0) then
          found := candidate;
        end if;
      end loop;
      if found is not null then
        digits := rtrim(trunc(found)::text, '0');
        point := length(trunc(found)::text);
        exit;
      end if;
    end loop;
  end if;

  k := length(digits);
  n := point;
  return case when x < 0 then '-' else '' end || case
    when k <= n and n <= 21 then digits || repeat('0', n - k)
    when 0 < n and n <= 21 then left(digits, n) || '.' || substr(digits, n + 1)
    when -6 < n and n <= 0 then '0.' || repeat('0', -n) || digits
    else left(digits, 1) || case when k > 1 then '.' || substr(digits, 2) else '' end
      || 'e' || case when n - 1 >= 0 then '+' else '-' end || abs(n - 1)::text
  end;
end
$$;
