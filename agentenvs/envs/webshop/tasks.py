"""The built-in catalog: a deterministic generator of WebShop-like products and goals.

Products are drawn from product types in WebShop's five categories (beauty,
electronics, fashion, food, furniture), each with its Amazon-style category
path, search query, attribute vocabulary (the kind WebShop mined: "long
lasting", "machine wash", "gluten free", ...), customization options (color,
size, flavor name, style, ...) and price range. Each product gets a brand,
a title, a description, bullet points, 3-6 attributes, 1-2 option lists,
a price or a price range and an image URL, written as a raw entry of
``items_shuffle.json`` plus an ``items_ins_v2.json`` note (attributes,
instruction, instruction attributes); the official loader's rules
(:mod:`agentenvs.envs.webshop.official`) turn them into products and goals, so the
built-in and the official data share one code path.

Goals are made as WebShop makes synthetic goals (instruction + ``with name:
value, and ...`` + price cap text), with one option combination per product
rather than all of them, so that no product appears in two splits. Product
``i`` depends only on ``(seed, i)``: a catalog of N products is the first N
products of any larger one. Goals are shuffled by a fixed permutation and
split test 500 / valid 1,000 / train the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentenvs.core import derive_rng, derive_seed
from agentenvs.envs.webshop.catalog import (
    Catalog,
    Goal,
    Product,
    build_or_open,
    build_version,
    cache_root,
    write_catalog,
)
from agentenvs.envs.webshop.official import price_cap, product_from_raw, synthetic_goal_text

CHUNK = 1000  # products drawn from one RNG stream

COLORS = (
    "black", "white", "navy blue", "dark brown", "light blue", "grey", "heather grey", "red", "wine red",
    "pink", "rose gold", "beige", "khaki", "army green", "olive", "ivory", "purple", "lavender", "silver",
    "gold", "charcoal", "burgundy", "teal", "coral", "mint green", "yellow", "orange", "camel", "multicolor",
    "tangerine",
)  # fmt: skip
SHIRT_SIZES = ("x-small", "small", "medium", "large", "x-large", "xx-large", "3x-large")
SHOE_SIZES = ("6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "12", "10 wide", "9 wide")
PANT_SIZES = ("28w x 30l", "30w x 30l", "32w x 30l", "32w x 32l", "34w x 32l", "36w x 32l", "38w x 34l")
BED_SIZES = ("twin", "full", "queen", "king", "california king")
PACKS = ("pack of 1", "pack of 2", "pack of 3", "pack of 4", "pack of 6", "pack of 12")


@dataclass(frozen=True)
class ProductType:
    """A kind of product: where it sits, how it is searched, what it can have."""

    category: str
    noun: str
    query: str
    path: str
    attributes: tuple[str, ...]
    modifiers: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    price: tuple[float, float]


def _t(category: str, noun: str, query: str, path: str, attributes: str, modifiers: str,
       options: Sequence[tuple[str, Sequence[str]]], price: tuple[float, float]) -> ProductType:  # fmt: skip
    return ProductType(
        category, noun, query, path, tuple(a.strip() for a in attributes.split(",")),
        tuple(m.strip() for m in modifiers.split(",")), tuple((n, tuple(v)) for n, v in options), price,
    )  # fmt: skip


FLAVORS = (
    "original", "vanilla", "dark chocolate", "sea salt caramel", "peanut butter", "strawberry", "honey",
    "cinnamon", "mint chocolate chip", "lemon", "cookies & cream", "spicy chili",
)  # fmt: skip
SCENTS = ("lavender", "unscented", "coconut", "rose", "eucalyptus", "vanilla", "citrus", "fresh linen")
SHADES = (
    "nude", "ruby red", "coral", "berry", "mauve", "pink", "plum", "natural beige", "warm ivory", "sand",
)  # fmt: skip

PRODUCT_TYPES: tuple[ProductType, ...] = (
    # fashion
    _t(
        "fashion",
        "running shoes",
        "men's athletic shoes",
        "Clothing, Shoes & Jewelry › Men › Shoes › Athletic › Running",
        "rubber sole, lightweight, non slip, breathable, arch support, lace up, memory foam",
        "Lightweight, Breathable, Mesh, Athletic, Cushioned",
        [("color", COLORS), ("size", SHOE_SIZES)],
        (25, 120),
    ),
    _t(
        "fashion",
        "sneakers",
        "women's fashion sneakers",
        "Clothing, Shoes & Jewelry › Women › Shoes › Fashion Sneakers",
        "rubber sole, slip on, memory foam, non slip, arch support, canvas",
        "Casual, Slip On, Low Top, Platform, Canvas",
        [("color", COLORS), ("size", SHOE_SIZES)],
        (20, 90),
    ),
    _t(
        "fashion",
        "t-shirt",
        "men's t-shirts",
        "Clothing, Shoes & Jewelry › Men › Clothing › Shirts › T-Shirts",
        (
            "machine wash, short sleeve, cotton spandex, classic fit, moisture wicking, quick drying, "
            "button closure"
        ),
        "Crew Neck, Graphic, Slim Fit, Cotton, Performance",
        [("color", COLORS), ("size", SHIRT_SIZES)],
        (8, 35),
    ),
    _t(
        "fashion",
        "hoodie",
        "women's hoodies",
        "Clothing, Shoes & Jewelry › Women › Clothing › Fashion Hoodies & Sweatshirts",
        "machine wash, long sleeve, drawstring closure, relaxed fit, fleece lined, polyester cotton",
        "Oversized, Pullover, Zip Up, Fleece, Cropped",
        [("color", COLORS), ("size", SHIRT_SIZES)],
        (18, 60),
    ),
    _t(
        "fashion",
        "jeans",
        "men's jeans",
        "Clothing, Shoes & Jewelry › Men › Clothing › Jeans",
        "machine wash, button closure, relaxed fit, stretch fabric, straight leg, zipper closure",
        "Slim Fit, Straight Leg, Stretch, Distressed, Classic",
        [("color", COLORS[:12]), ("size", PANT_SIZES)],
        (25, 80),
    ),
    _t(
        "fashion",
        "yoga pants",
        "women's yoga pants",
        "Clothing, Shoes & Jewelry › Women › Clothing › Active › Active Pants",
        (
            "high waist, tummy control, moisture wicking, quick drying, butt lifting, elastic waistband, "
            "machine wash"
        ),
        "High Waisted, Workout, Leggings, Compression, Flare",
        [("color", COLORS), ("size", SHIRT_SIZES)],
        (15, 45),
    ),
    _t(
        "fashion",
        "dress",
        "women's dresses",
        "Clothing, Shoes & Jewelry › Women › Clothing › Dresses › Casual",
        "machine wash, short sleeve, long sleeve, elastic waist, v neck, polyester spandex",
        "Summer, Floral, Maxi, Wrap, Casual",
        [("color", COLORS), ("size", SHIRT_SIZES)],
        (20, 70),
    ),
    _t(
        "fashion",
        "winter boots",
        "women's boots",
        "Clothing, Shoes & Jewelry › Women › Shoes › Boots › Snow",
        "rubber sole, water resistant, faux fur, non slip, anti slip, zipper closure",
        "Waterproof, Insulated, Snow, Ankle, Mid Calf",
        [("color", COLORS[:16]), ("size", SHOE_SIZES)],
        (35, 140),
    ),
    _t(
        "fashion",
        "baseball cap",
        "baseball caps",
        "Clothing, Shoes & Jewelry › Men › Accessories › Hats & Caps",
        "adjustable strap, cotton, breathable, hand wash, sun protection",
        "Classic, Adjustable, Vintage, Trucker, Washed",
        [("color", COLORS)],
        (9, 30),
    ),
    _t(
        "fashion",
        "pajama set",
        "women's pajama sets",
        "Clothing, Shoes & Jewelry › Women › Clothing › Lingerie, Sleep & Lounge › Sleep & Lounge",
        "machine wash, soft material, long sleeve, button closure, elastic waistband, comfortable fit",
        "Satin, Silk, Button Down, Two Piece, Soft",
        [("color", COLORS), ("size", SHIRT_SIZES)],
        (20, 50),
    ),
    # beauty
    _t(
        "beauty",
        "lipstick",
        "lipstick",
        "Beauty & Personal Care › Makeup › Lips › Lipstick",
        "long lasting, cruelty free, paraben free, highly pigmented, easy apply, waterproof",
        "Matte, Liquid, Velvet, Creamy, Long Wear",
        [("color", SHADES)],
        (6, 28),
    ),
    _t(
        "beauty",
        "foundation",
        "liquid foundation",
        "Beauty & Personal Care › Makeup › Face › Foundation",
        "long lasting, oil free, full coverage, cruelty free, natural ingredients, sensitive skin",
        "Liquid, Matte, Full Coverage, Lightweight, Dewy",
        [("color", SHADES)],
        (9, 45),
    ),
    _t(
        "beauty",
        "eyeshadow palette",
        "eyeshadow palette",
        "Beauty & Personal Care › Makeup › Eyes › Eyeshadow",
        "highly pigmented, long lasting, cruelty free, easy carry, travel size, blendable",
        "Shimmer, Matte, Glitter, Nude, Professional",
        [("style", ("warm", "cool", "smoky", "natural", "bright"))],
        (8, 40),
    ),
    _t(
        "beauty",
        "shampoo",
        "sulfate free shampoo",
        "Beauty & Personal Care › Hair Care › Shampoo & Conditioner › Shampoos",
        "sulfate free, paraben free, natural ingredients, dry hair, hair growth, damaged hair",
        "Moisturizing, Volumizing, Argan Oil, Clarifying, Organic",
        [("scent", SCENTS), ("size", ("8 fl oz", "16 fl oz", "33.8 fl oz"))],
        (7, 35),
    ),
    _t(
        "beauty",
        "face moisturizer",
        "face moisturizer",
        "Beauty & Personal Care › Skin Care › Face › Creams & Moisturizers",
        "hyaluronic acid, fine lines, dry skin, sensitive skin, fragrance free, anti aging, cruelty free",
        "Hydrating, Daily, Night, Anti Aging, Oil Free",
        [("size", ("1.7 ounce", "2.5 ounce", "3.4 ounce"))],
        (10, 60),
    ),
    _t(
        "beauty",
        "nail polish",
        "nail polish",
        "Beauty & Personal Care › Foot, Hand & Nail Care › Nail Art & Polish › Nail Polish",
        "long lasting, quick drying, non toxic, easy apply, high gloss",
        "Gel, Quick Dry, Glossy, Chip Resistant, Vegan",
        [("color", SHADES + ("black", "white", "silver"))],
        (5, 18),
    ),
    _t(
        "beauty",
        "hair dryer",
        "hair dryer",
        "Beauty & Personal Care › Hair Care › Styling Tools & Appliances › Hair Dryers",
        "high speed, low noise, dry hair, fast drying, travel size, heat settings",
        "Ionic, Professional, Lightweight, Compact, Salon",
        [("color", ("black", "white", "pink", "rose gold", "purple"))],
        (25, 150),
    ),
    _t(
        "beauty",
        "perfume",
        "women's fragrance",
        "Beauty & Personal Care › Fragrance › Women's › Eau de Parfum",
        "long lasting, travel size, alcohol free, natural ingredients, gift set",
        "Floral, Fresh, Oriental, Woody, Eau de Parfum",
        [("size", ("1 fl oz", "1.7 fl oz", "3.4 fl oz"))],
        (15, 120),
    ),
    _t(
        "beauty",
        "body wash",
        "body wash",
        "Beauty & Personal Care › Skin Care › Body › Cleansers › Body Washes",
        "sensitive skin, natural ingredients, paraben free, dry skin, cruelty free, essential oils",
        "Moisturizing, Exfoliating, Gentle, Organic, Foaming",
        [("scent", SCENTS), ("size", PACKS[:4])],
        (6, 30),
    ),
    _t(
        "beauty",
        "makeup brush set",
        "makeup brushes",
        "Beauty & Personal Care › Tools & Accessories › Makeup Brushes & Tools › Brush Sets",
        "synthetic hair, easy clean, travel size, cruelty free, storage case",
        "Professional, Soft, Kabuki, Complete, Premium",
        [("color", ("black", "pink", "rose gold", "white", "purple"))],
        (9, 45),
    ),
    # electronics
    _t(
        "electronics",
        "bluetooth speaker",
        "bluetooth speaker",
        "Electronics › Portable Audio & Video › Portable Speakers & Docks › Portable Bluetooth Speakers",
        (
            "high definition, easy carry, waterproof, long battery life, usb charging, stereo sound, "
            "wireless bluetooth"
        ),
        "Portable, Waterproof, Wireless, Outdoor, Mini",
        [("color", ("black", "blue", "red", "grey", "army green", "white"))],
        (20, 150),
    ),
    _t(
        "electronics",
        "wireless earbuds",
        "wireless earbuds",
        "Electronics › Headphones, Earbuds & Accessories › Earbuds & In-Ear Headphones",
        (
            "noise cancelling, wireless bluetooth, hands free, stereo sound, long battery life, easy use, "
            "high quality"
        ),
        "True Wireless, Sport, Noise Cancelling, In Ear, Waterproof",
        [("color", ("black", "white", "navy blue", "pink", "silver"))],
        (19, 180),
    ),
    _t(
        "electronics",
        "phone case",
        "iphone case",
        "Cell Phones & Accessories › Cases, Holsters & Sleeves › Basic Cases",
        "shock absorbing, wireless charging, easy install, heavy duty, scratch resistant, slim fit",
        "Clear, Rugged, Slim, Magnetic, Leather",
        [
            ("color", COLORS),
            ("size", ("iphone 13", "iphone 14", "iphone 14 pro", "iphone 15", "iphone 15 pro max")),
        ],
        (7, 35),
    ),
    _t(
        "electronics",
        "usb c charger",
        "usb c charger",
        "Electronics › Computers & Accessories › Laptop Accessories › Chargers & Adapters",
        "fast charging, usb port, easy carry, high speed, plug play, compact size",
        "Fast, Compact, Dual Port, Foldable, Travel",
        [("style", ("20w", "30w", "45w", "65w", "100w"))],
        (12, 60),
    ),
    _t(
        "electronics",
        "hdmi cable",
        "hdmi cable",
        "Electronics › Accessories & Supplies › Audio & Video Accessories › Cables › HDMI Cables",
        "high speed, gold plated, plug play, ultra hd, high definition, braided cable",
        "Braided, High Speed, 4K, 8K, Flat",
        [("size", ("3 feet", "6 feet", "10 feet", "15 feet", "25 feet")), ("style", PACKS[:3])],
        (6, 30),
    ),
    _t(
        "electronics",
        "smart watch",
        "smart watch",
        "Electronics › Wearable Technology › Smartwatches",
        "heart rate, long battery life, water resistant, fitness tracker, easy use, touch screen",
        "Fitness, Sport, Waterproof, Bluetooth, Slim",
        [("color", ("black", "silver", "rose gold", "navy blue", "pink", "army green"))],
        (30, 250),
    ),
    _t(
        "electronics",
        "security camera",
        "wireless security camera",
        "Electronics › Camera & Photo › Video Surveillance › Surveillance Cameras",
        "night vision, motion detection, easy install, two way audio, high definition, wifi connection",
        "Outdoor, Indoor, Wireless, 2K, Pan Tilt",
        [("style", ("1 camera", "2 cameras", "4 cameras"))],
        (25, 200),
    ),
    _t(
        "electronics",
        "gaming mouse",
        "gaming mouse",
        (
            "Electronics › Computers & Accessories › Computer Accessories & Peripherals › "
            "Keyboards, Mice & Accessories › Mice"
        ),
        "plug play, rgb lighting, high precision, ergonomic design, programmable buttons, usb port",
        "Wireless, Wired, RGB, Ergonomic, Lightweight",
        [("color", ("black", "white", "pink", "grey"))],
        (12, 90),
    ),
    _t(
        "electronics",
        "laptop stand",
        "laptop stand",
        "Electronics › Computers & Accessories › Laptop Accessories › Stands",
        "easy carry, height adjustable, aluminum alloy, heat dissipation, non slip, foldable design",
        "Adjustable, Aluminum, Portable, Ergonomic, Foldable",
        [("color", ("silver", "grey", "black", "rose gold"))],
        (15, 70),
    ),
    _t(
        "electronics",
        "tv wall mount",
        "tv wall mount",
        (
            "Electronics › Television & Video › Accessories › TV Mounts, Stands & Turntables › "
            "TV Wall & Ceiling Mounts"
        ),
        "easy install, heavy duty, full motion, tilt swivel, wall mounted",
        "Full Motion, Tilting, Fixed, Articulating, Low Profile",
        [("size", ("26-55 inch", "32-65 inch", "42-85 inch"))],
        (20, 110),
    ),
    # furniture
    _t(
        "furniture",
        "office chair",
        "office chair",
        "Home & Kitchen › Furniture › Home Office Furniture › Home Office Chairs › Desk Chairs",
        "lumbar support, height adjustable, easy assemble, high back, mid century, heavy duty, pu leather",
        "Ergonomic, Mesh, Executive, Swivel, Reclining",
        [("color", ("black", "grey", "white", "navy blue", "beige", "pink"))],
        (60, 350),
    ),
    _t(
        "furniture",
        "bookshelf",
        "bookshelf",
        "Home & Kitchen › Furniture › Home Office Furniture › Bookcases",
        "easy assemble, storage space, engineered wood, living room, metal frame, space saving",
        "Industrial, Ladder, Corner, 5 Tier, Wooden",
        [
            ("color", ("rustic brown", "black", "white", "walnut", "oak")),
            ("size", ("3 tier", "4 tier", "5 tier")),
        ],
        (40, 220),
    ),
    _t(
        "furniture",
        "coffee table",
        "coffee table",
        "Home & Kitchen › Furniture › Living Room Furniture › Tables › Coffee Tables",
        "easy assemble, living room, storage space, solid wood, metal frame, mid century",
        "Modern, Lift Top, Round, Rustic, Glass",
        [("color", ("walnut", "black", "white", "grey", "natural"))],
        (50, 300),
    ),
    _t(
        "furniture",
        "bed frame",
        "queen bed frame",
        "Home & Kitchen › Furniture › Bedroom Furniture › Beds, Frames & Bases › Bed Frames",
        "easy assemble, box spring, heavy duty, storage space, noise free, metal frame, solid wood",
        "Platform, Upholstered, Metal, Wooden, Low Profile",
        [("color", ("black", "grey", "white", "beige", "dark brown")), ("size", BED_SIZES)],
        (90, 600),
    ),
    _t(
        "furniture",
        "sofa",
        "sectional sofa",
        "Home & Kitchen › Furniture › Living Room Furniture › Sofas & Couches",
        "living room, easy assemble, high density, memory foam, solid wood, faux leather",
        "Sectional, Convertible, Loveseat, Velvet, Modern",
        [("color", ("grey", "beige", "navy blue", "dark brown", "army green", "ivory"))],
        (250, 1200),
    ),
    _t(
        "furniture",
        "nightstand",
        "nightstand",
        "Home & Kitchen › Furniture › Bedroom Furniture › Nightstands",
        "easy assemble, storage space, living room, solid wood, charging station",
        "Modern, Rustic, Set of 2, Floating, Farmhouse",
        [("color", ("white", "black", "walnut", "grey", "rustic brown"))],
        (35, 180),
    ),
    _t(
        "furniture",
        "dining chairs",
        "dining chairs set of 4",
        "Home & Kitchen › Furniture › Kitchen & Dining Room Furniture › Chairs",
        "easy assemble, dining room, solid wood, metal legs, pu leather, high density",
        "Mid Century, Upholstered, Velvet, Farmhouse, Modern",
        [
            ("color", ("grey", "beige", "black", "green", "navy blue")),
            ("size", ("set of 2", "set of 4", "set of 6")),
        ],
        (80, 450),
    ),
    _t(
        "furniture",
        "shoe rack",
        "shoe rack",
        (
            "Home & Kitchen › Storage & Organization › Clothing & Closet Storage › Shoe Organizers › "
            "Free Standing Shoe Racks"
        ),
        "easy assemble, space saving, storage space, metal frame, heavy duty",
        "Stackable, 4 Tier, Bamboo, Narrow, Entryway",
        [
            ("color", ("black", "white", "natural", "grey")),
            ("size", ("3 tier", "4 tier", "5 tier", "8 tier")),
        ],
        (18, 90),
    ),
    _t(
        "furniture",
        "ottoman",
        "storage ottoman",
        "Home & Kitchen › Furniture › Living Room Furniture › Ottomans",
        "storage space, living room, easy assemble, faux leather, high density",
        "Storage, Round, Folding, Tufted, Velvet",
        [("color", ("grey", "beige", "navy blue", "dark brown", "black", "pink"))],
        (30, 160),
    ),
    _t(
        "furniture",
        "tv stand",
        "tv stand",
        "Home & Kitchen › Furniture › Living Room Furniture › Television Stands & Entertainment Centers",
        "easy assemble, storage space, living room, engineered wood, cable management",
        "Modern, Farmhouse, Corner, Media Console, Industrial",
        [("color", ("black", "white", "walnut", "rustic brown", "grey"))],
        (60, 400),
    ),
    # food
    _t(
        "food",
        "protein bars",
        "protein bars",
        "Grocery & Gourmet Food › Snacks & Sweets › Snack Bars › Protein Bars",
        "gluten free, high protein, low sugar, non gmo, keto friendly, low carb",
        "High Protein, Keto, Vegan, Chewy, Crunchy",
        [("flavor name", FLAVORS), ("size", PACKS)],
        (10, 45),
    ),
    _t(
        "food",
        "coffee beans",
        "whole bean coffee",
        "Grocery & Gourmet Food › Beverages › Coffee, Tea & Cocoa › Coffee › Whole Coffee Beans",
        "usda organic, fair trade, non gmo, dark roast, medium roast, kosher certified",
        "Organic, Single Origin, Whole Bean, Dark Roast, Espresso",
        [
            ("flavor name", ("original", "vanilla", "hazelnut", "french roast", "colombian")),
            ("size", ("12 ounce", "2 pound", "5 pound")),
        ],
        (9, 50),
    ),
    _t(
        "food",
        "green tea",
        "green tea bags",
        "Grocery & Gourmet Food › Beverages › Coffee, Tea & Cocoa › Tea › Green",
        "usda organic, caffeine free, non gmo, natural ingredients, individually wrapped, sugar free",
        "Organic, Matcha, Jasmine, Decaf, Loose Leaf",
        [("flavor name", ("original", "jasmine", "lemon", "mint", "honey ginseng")), ("size", PACKS[:4])],
        (5, 30),
    ),
    _t(
        "food",
        "beef jerky",
        "beef jerky",
        "Grocery & Gourmet Food › Meat & Seafood › Jerky & Dried Meats › Beef Jerky",
        "high protein, gluten free, low fat, ready eat, keto friendly, grass fed",
        "Original, Teriyaki, Peppered, Sweet, Spicy",
        [
            ("flavor name", ("original", "teriyaki", "peppered", "sweet & hot", "spicy chili")),
            ("size", PACKS[:4]),
        ],
        (8, 40),
    ),
    _t(
        "food",
        "olive oil",
        "extra virgin olive oil",
        (
            "Grocery & Gourmet Food › Pantry Staples › Cooking & Baking › "
            "Oils, Vinegars & Salad Dressings › Oils › Olive"
        ),
        "cold pressed, non gmo, usda organic, gluten free, kosher certified",
        "Extra Virgin, Organic, Italian, Cold Pressed, Greek",
        [("size", ("16.9 fl oz", "25.3 fl oz", "33.8 fl oz", "101 fl oz"))],
        (9, 45),
    ),
    _t(
        "food",
        "dark chocolate",
        "dark chocolate bar",
        "Grocery & Gourmet Food › Snacks & Sweets › Chocolate › Bars",
        "non gmo, gluten free, dairy free, fair trade, low sugar, individually wrapped",
        "Organic, 70% Cacao, Sea Salt, Artisan, Belgian",
        [("flavor name", FLAVORS[:8]), ("size", PACKS)],
        (5, 40),
    ),
    _t(
        "food",
        "mixed nuts",
        "mixed nuts",
        "Grocery & Gourmet Food › Snacks & Sweets › Snack Foods › Nuts & Seeds › Mixed Nuts",
        "high protein, non gmo, gluten free, resealable bag, low sodium, keto friendly",
        "Roasted, Salted, Unsalted, Deluxe, Raw",
        [
            ("flavor name", ("lightly salted", "unsalted", "honey roasted", "sea salt")),
            ("size", ("1 pound", "2 pound", "3 pound")),
        ],
        (8, 40),
    ),
    _t(
        "food",
        "pasta",
        "whole wheat pasta",
        "Grocery & Gourmet Food › Pantry Staples › Dried Beans, Grains & Rice › Pasta & Noodles",
        "gluten free, non gmo, usda organic, high protein, plant based",
        "Organic, Whole Wheat, Chickpea, Italian, Lentil",
        [("style", ("spaghetti", "penne", "rotini", "fusilli", "elbows")), ("size", PACKS[:5])],
        (4, 30),
    ),
    _t(
        "food",
        "sparkling water",
        "sparkling water",
        (
            "Grocery & Gourmet Food › Beverages › Bottled Beverages, Water & Drink Mixes › Water › "
            "Sparkling Water"
        ),
        "zero sugar, caffeine free, natural flavors, non gmo, low calorie",
        "Sparkling, Flavored, Natural, Mineral, Seltzer",
        [
            ("flavor name", ("lime", "grapefruit", "lemon", "black cherry", "mango")),
            ("size", ("pack of 8", "pack of 12", "pack of 24")),
        ],
        (6, 30),
    ),
    _t(
        "food",
        "granola",
        "granola cereal",
        "Grocery & Gourmet Food › Breakfast Foods › Cereals › Granola",
        "gluten free, non gmo, low sugar, whole grain, high fiber, plant based",
        "Crunchy, Organic, Keto, Honey Almond, Ancient Grain",
        [
            ("flavor name", ("honey almond", "vanilla", "dark chocolate", "cinnamon", "blueberry")),
            ("size", PACKS[:4]),
        ],
        (5, 30),
    ),
)

BRAND_HEADS = (
    "Vel", "Kin", "Lum", "Aur", "Nox", "Zen", "Tal", "Bri", "Cor", "Mir", "Sol", "Eve", "Ora", "Qua", "Ris",
    "Ham", "Pol", "Dax", "Fen", "Gal", "Ivo", "Jun", "Kaz", "Lor", "Mav", "Nel", "Oak", "Pra",
)  # fmt: skip
BRAND_TAILS = (
    "ora", "tex", "ify", "ano", "ix", "ero", "ium", "ley", "wood", "mark", "ava", "io", "ent", "on", "ly",
    "ara", "oft", "ista", "ello", "et",
)  # fmt: skip
AUDIENCES = ("for Men", "for Women", "for Kids", "for Home", "for Office", "for Travel", "for Gift", "")
INSTRUCTION_OPENERS = (
    "i am looking for", "i need", "i want", "i'm looking for", "find me", "i would like",
    "i am searching for", "get me", "i'm searching for", "show me",
)  # fmt: skip
DESCRIPTION_SENTENCES = (
    "Our {noun} is designed for everyday use and built to last.",
    "Made with care by {brand}, this {noun} combines {a1} comfort with {a2} quality.",
    "Perfect for daily use, travel, or as a thoughtful gift.",
    "Every {noun} is inspected before shipping; contact us anytime if anything is not right.",
    "Features {a1} and {a2} for a better experience.",
    "Customers love how this {noun} looks and feels.",
    "Easy to care for and simple to use, right out of the box.",
)


class Draws:
    """Uniform draws of one product, taken from its chunk's stream in one numpy call."""

    SIZE = 96

    def __init__(self, rng: np.random.Generator) -> None:
        self.values = rng.random(self.SIZE).tolist()
        self.position = 0

    def random(self) -> float:
        value = self.values[self.position % self.SIZE]
        self.position += 1
        return value

    def index(self, size: int) -> int:
        return min(int(self.random() * size), size - 1)

    def choice(self, pool: Sequence[str]) -> str:
        return pool[self.index(len(pool))]

    def sample(self, pool: Sequence[str], low: int, high: int) -> list[str]:
        """``low..high`` distinct items of ``pool``, in pool order."""
        count = low + self.index(min(high, len(pool)) - low + 1)
        positions = list(range(len(pool)))
        for i in range(count):
            j = i + self.index(len(pool) - i)
            positions[i], positions[j] = positions[j], positions[i]
        return [pool[i] for i in sorted(positions[:count])]


def _asin(draws: Draws) -> str:
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return "B0" + "".join(alphabet[draws.index(len(alphabet))] for _ in range(8))


def _price_text(draws: Draws, low: float, high: float, ranged: bool) -> str:
    first = round(low + (high - low) * draws.random(), 2)
    if not ranged:
        return f"${first:.2f}"
    second = round(first * (1.1 + 0.7 * draws.random()), 2)
    return f"${first:.2f} - ${second:.2f}"


def _with_article(phrase: str) -> str:
    if phrase.split(" ")[-1].endswith("s"):
        return phrase
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def raw_product(draws: Draws, asin: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """One ``items_shuffle`` entry and its ``items_ins_v2`` note."""
    kind = PRODUCT_TYPES[draws.index(len(PRODUCT_TYPES))]
    brand = draws.choice(BRAND_HEADS) + draws.choice(BRAND_TAILS)
    attributes = draws.sample(kind.attributes, 3, 6)
    modifiers = draws.sample(kind.modifiers, 1, 2)
    audience = draws.choice(AUDIENCES)
    feature = draws.choice(attributes).title()
    title = " ".join(p for p in [brand, *modifiers, kind.noun.title(), "-", feature, audience] if p)
    options: dict[str, list[dict[str, Any]]] = {}
    for name, pool in kind.options:
        if not options or draws.random() < 0.8:
            values = draws.sample(pool, 2, 6)
            options[name.title()] = [
                {"value": v.title() if draws.random() < 0.3 else v, "image": None} for v in values
            ]
    a1, a2 = (attributes + attributes)[:2]
    sentences = draws.sample(DESCRIPTION_SENTENCES, 3, 3)
    description = " ".join(s.format(noun=kind.noun, brand=brand, a1=a1, a2=a2) for s in sentences)
    bullets = [
        f"{a.upper()}: this {kind.noun} is {a}, tested for quality and comfort." for a in attributes[:4]
    ]
    bullets.append(f"WHAT YOU GET: 1 x {brand} {kind.noun}, user guide, friendly customer service.")
    raw = {
        "asin": asin,
        "name": title,
        "full_description": description,
        "small_description": bullets,
        "images": [f"https://images.agentenvs.local/{asin}.jpg"],
        "category": kind.category,
        "query": kind.query,
        "product_category": kind.path,
        "pricing": _price_text(draws, *kind.price, ranged=draws.random() < 0.25),
        "customization_options": options,
    }
    wanted = draws.sample(attributes, 1, 3)
    opener = draws.choice(INSTRUCTION_OPENERS)
    if len(wanted) > 1 and draws.random() < 0.5:
        instruction = f"{opener} {_with_article(kind.noun)} that is {', '.join(wanted[:-1])} and {wanted[-1]}"
    else:
        instruction = f"{opener} {_with_article(' '.join([*wanted, kind.noun]))}"
    note = {"attributes": attributes, "instruction": instruction, "instruction_attributes": wanted}
    return raw, note


def raw_products(count: int, seed: int = 0) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """The first ``count`` raw entries and notes of the generated catalog ``seed``."""
    seen: set[str] = set()
    for start in range(0, count, CHUNK):
        rng = derive_rng("webshop-catalog", seed, start // CHUNK)
        for _ in range(min(CHUNK, count - start)):
            draws = Draws(rng)
            asin = _asin(draws)
            while asin in seen:
                asin = _asin(draws)
            seen.add(asin)
            yield raw_product(draws, asin)


def generated_goal(product: Product, note: dict[str, Any]) -> Goal:
    """One synthetic goal for ``product``: one option value per option name (names sorted)."""
    options = dict(product.options)
    pairs = tuple(
        (name, options[name][derive_seed("webshop-goal", product.asin, name) % len(options[name])])
        for name in sorted(options)
    )
    upper, price_text = price_cap(product.price, product.asin)
    return Goal.for_product(
        product,
        synthetic_goal_text(note["instruction"], pairs, price_text),
        note["instruction_attributes"],
        pairs,
        upper,
    )


def generate(count: int, seed: int = 0) -> tuple[Iterator[Product], list[Goal]]:
    """Products (lazily) and the shuffled goal list of a generated catalog.

    Goals fill in as the product iterator is consumed; the list is shuffled
    once the iterator is exhausted (read products first).
    """
    goals: list[Goal] = []

    def products() -> Iterator[Product]:
        for raw, note in raw_products(count, seed):
            product = product_from_raw(raw, note["attributes"])
            goals.append(generated_goal(product, note))
            yield product
        order = derive_rng("webshop-goal-order", seed, count).permutation(len(goals))
        goals[:] = [goals[int(i)] for i in order]

    return products(), goals


def write_official_files(directory: str | Path, count: int, seed: int = 0, *, suffix: str = "") -> None:
    """Write generated products as ``items_shuffle{suffix}.json`` + ``items_ins_v2{suffix}.json``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    raws, notes = [], {}
    for raw, note in raw_products(count, seed):
        raws.append(raw)
        notes[raw["asin"]] = note
    (directory / f"items_shuffle{suffix}.json").write_text(json.dumps(raws))
    (directory / f"items_ins_v2{suffix}.json").write_text(json.dumps(notes))


def generated_catalog_dir(num_products: int, seed: int = 0, cache_dir: str | Path | None = None) -> Path:
    """Where the generated catalog of this size and seed is cached."""
    version = build_version("agentenvs.envs.webshop.tasks", "agentenvs.envs.webshop.official")
    return (Path(cache_dir) if cache_dir else cache_root()) / f"generated-n{num_products}-s{seed}-{version}"


def generated_catalog(
    num_products: int = 10_000, seed: int = 0, cache_dir: str | Path | None = None
) -> Catalog:
    """The generated catalog, built once into the cache (a few seconds for 10k products)."""
    if num_products < 1:
        raise ValueError(f"num_products must be >= 1, got {num_products}")

    def build(target: Path) -> None:
        products, goals = generate(num_products, seed)
        write_catalog(
            target, products, goals, {"source": "generated", "num_products": num_products, "seed": seed}
        )

    return build_or_open(generated_catalog_dir(num_products, seed, cache_dir), build)
